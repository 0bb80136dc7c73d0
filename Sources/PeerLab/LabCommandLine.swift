import ConvergenceLab
import Foundation
import NetworkLab

/// `peerd-lab`'s command line: the options of docs/lab.md as a ``LabConfiguration``, with the programs
/// and the script the run needs found by ``LabTools``.
enum LabCommandLine {
    static let usage = """
        usage: peerd-lab --nodes N [--relays K] [--duration 90s] [--rate 25] [--seed S] [--faults LIST] \
        [--settle 60s] [--keep DIR] [--report DIR] [--netlab PATH] [--progress text|json] [--plant divergence]

        Runs N nodes (and K relays) as `peerd run` on hosts of their own (network namespaces, each with \
        its own avahi-daemon; mDNS only), drives a seeded workload of --rate writes a second (default 25, \
        across all nodes: concurrent edits of one item on several nodes, edits against deletes, undos, \
        retries, claims and takeovers) through their HTTP APIs under a seeded schedule of faults (LIST: all, \
        or some of partition,rate,delay,loss,kill,stop,avahi,clock) for --duration, heals everything, waits \
        up to --settle for convergence and checks it: same cursor and state hash, every acknowledged write \
        everywhere, projections equal to the lab's own fold of all events, no forks. Writes lab-report.json, \
        lab-report.html and summary.txt to --report (default ./peerd-lab-SEED-TIME). Exit 0 when every \
        check holds, 1 when one fails, 2 on bad usage or when the lab cannot run here (it needs root), 3 \
        when the lab itself broke, 130 when interrupted. --keep DIR keeps every data directory and log. \
        peerd, peerd-lab-link and netlab.sh are taken from beside peerd-lab, else from PATH (netlab.sh \
        also from ../share/peersync/, $PEERSYNC_NETLAB or --netlab). --progress json prints the progress \
        as one JSON object a line on stderr. --plant divergence is for tests: it removes one event from \
        one node's file near the end, so that the checks must fail. See docs/lab.md.

        """

    static let options: Set<String> = [
        "nodes", "relays", "duration", "rate", "seed", "faults", "keep", "report", "settle", "netlab", "progress",
        "plant",
    ]

    /// The run `words` ask for; throws ``LabUsageError`` for bad usage and ``LabToolMissing`` for a missing
    /// program.
    static func configuration(_ words: [String], tools: LabTools) throws -> (LabConfiguration, json: Bool) {
        let given = try parse(words)
        func number(_ option: String, default value: Int?, range: ClosedRange<Int>) throws -> Int {
            guard let text = given[option] else {
                guard let value else { throw LabUsageError("peerd-lab needs --\(option)") }
                return value
            }
            guard let parsed = Int(text), range.contains(parsed) else {
                throw LabUsageError("--\(option) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return parsed
        }
        let peers = try number("nodes", default: nil, range: 2...150)
        let relays = try number("relays", default: 0, range: 0...10)
        let seed: UInt64
        if let text = given["seed"] {
            guard let parsed = UInt64(text) else { throw LabUsageError("--seed must be a whole number ≥ 0") }
            seed = parsed
        } else {
            seed = UInt64.random(in: 0...UInt64(UInt32.max))
        }
        var configuration = LabConfiguration(
            peers: peers, relays: relays,
            durationMs: try LabConfiguration.parseDuration(given["duration"] ?? "90s", option: "duration"),
            seed: seed, faults: try FaultKind.parseList(given["faults"] ?? "all"),
            netlab: try tools.netlabScript(option: given["netlab"].map(absolute)),
            peerd: try tools.executable("peerd", builtBy: "`swift build --product peerd`"))
        configuration.rate = try number("rate", default: LabConfiguration.defaultRate, range: 1...500)
        if configuration.faults.contains(.delay) {
            configuration.labLink = try tools.executable(
                "peerd-lab-link", builtBy: "`swift build --product peerd-lab-link`")
        }
        configuration.keep = given["keep"].map(absolute)
        configuration.report = given["report"].map(absolute)
        configuration.settleMs = try LabConfiguration.parseDuration(given["settle"] ?? "60s", option: "settle")
        if let plant = given["plant"] {
            guard plant == "divergence" else { throw LabUsageError("--plant knows only divergence, not \"\(plant)\"") }
            configuration.plantDivergence = true
        }
        let progress = given["progress"] ?? "text"
        guard progress == "text" || progress == "json" else {
            throw LabUsageError("--progress must be text or json, not \"\(progress)\"")
        }
        return (configuration, progress == "json")
    }

    /// `--name value` and `--name=value` of the known ``options``.
    private static func parse(_ words: [String]) throws -> [String: String] {
        var given: [String: String] = [:]
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else { throw LabUsageError("unexpected argument \"\(word)\"") }
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            guard options.contains(name) else { throw LabUsageError("unknown option \(word)") }
            if body.contains("=") {
                given[name] = String(body.drop { $0 != "=" }.dropFirst())
            } else {
                guard index < words.count else { throw LabUsageError("--\(name) needs a value") }
                given[name] = words[index]
                index += 1
            }
        }
        return given
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
