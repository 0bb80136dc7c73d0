import ConvergenceLab
import Foundation
import Lifecycle
import NetworkLab

/// `peerd lab`: a convergence lab of real nodes on network-namespace hosts (docs/lab.md).
enum LabCommand {
    static let command = Command(
        path: ["lab"],
        usage: """
            lab --nodes N [--relays K] [--duration 90s] [--seed S] [--faults LIST] [--keep DIR] [--report DIR] \
            [--settle 60s] [--netlab PATH] [--plant divergence]
            """,
        summary: """
            Runs N nodes (and K relays) as `peerd run` on hosts of their own (network namespaces, each with \
            its own avahi-daemon; mDNS only), drives a seeded workload through their HTTP APIs under a seeded \
            schedule of faults (LIST: all, or some of partition,rate,delay,loss,kill,stop,avahi,clock) for --duration, \
            heals everything, waits up to --settle for convergence and checks it: same cursor and state hash, \
            every acknowledged write everywhere, projections equal to the lab's own fold of all events, no \
            forks. Writes lab-report.json and summary.txt to --report (default ./peerd-lab-SEED-TIME). Exit 0 \
            when every check holds, 1 when one fails, 2 on bad usage or when the lab cannot run here (it \
            needs root), 3 when the lab itself broke. --keep DIR keeps every data directory and log. \
            --netlab: scripts/netlab.sh (default $PEERSYNC_NETLAB, else the source tree's, else \
            /usr/local/share/peersync/netlab.sh). --plant divergence is for tests: it removes one event from \
            one node's file near the end, so that the checks must fail.
            """,
        options: ["nodes", "relays", "duration", "seed", "faults", "keep", "report", "settle", "netlab", "plant"]
    ) { arguments, _ in
        _ = try arguments.positional()
        let configuration = try configuration(arguments)
        if let reason = ConvergenceLab.unavailableReason(configuration) {
            fail("lab: cannot run here: \(reason)", code: 2)
        }
        let progress = ProgressLine()
        let task = Task { try await ConvergenceLab.run(configuration, progress: progress) }
        // A handler of its own per signal (the daemon's UnixSignals): whichever thread the kernel picks.
        let signals = UnixSignals([SIGINT, SIGTERM])
        Task {
            for await _ in signals {
                task.cancel()
                break
            }
        }
        do {
            let outcome = try await task.value
            print(outcome.summary, terminator: "")
            print("report: \(outcome.directory.path)/lab-report.json")
            exit(outcome.report.passed ? 0 : 1)
        } catch {
            // A signal cancels the run; what was running then may fail in other ways than a CancellationError
            // (the terminal's SIGINT also reaches the lab's curl and netlab.sh children).
            if task.isCancelled { fail("lab: interrupted; its hosts and daemons are gone", code: 130) }
            fail("lab: the lab itself failed (seed \(configuration.seed)): \(error)", code: 3)
        }
    }

    private static func configuration(_ arguments: Arguments) throws -> LabConfiguration {
        func number(_ option: String, default value: Int?, range: ClosedRange<Int>) throws -> Int {
            guard let text = arguments.options[option] else {
                guard let value else { throw UsageError("lab needs --\(option)") }
                return value
            }
            guard let parsed = Int(text), range.contains(parsed) else {
                throw UsageError("--\(option) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return parsed
        }
        do {
            let peers = try number("nodes", default: nil, range: 2...150)
            let relays = try number("relays", default: 0, range: 0...10)
            let seed: UInt64
            if let text = arguments.options["seed"] {
                guard let parsed = UInt64(text) else { throw UsageError("--seed must be a whole number ≥ 0") }
                seed = parsed
            } else {
                seed = UInt64.random(in: 0...UInt64(UInt32.max))
            }
            var configuration = LabConfiguration(
                peers: peers, relays: relays,
                durationMs: try LabConfiguration.parseDuration(
                    arguments.options["duration"] ?? "90s", option: "duration"),
                seed: seed, faults: try FaultKind.parseList(arguments.options["faults"] ?? "all"),
                netlab: netlabScript(arguments.options["netlab"]), peerd: executable())
            configuration.keep = arguments.options["keep"].map { absolute($0) }
            configuration.report = arguments.options["report"].map { absolute($0) }
            configuration.settleMs = try LabConfiguration.parseDuration(
                arguments.options["settle"] ?? "60s", option: "settle")
            if let plant = arguments.options["plant"] {
                guard plant == "divergence" else { throw UsageError("--plant knows only divergence, not \"\(plant)\"") }
                configuration.plantDivergence = true
            }
            return configuration
        } catch let error as LabUsageError {
            throw UsageError(error.description)
        }
    }

    /// `--netlab`, else `$PEERSYNC_NETLAB`, else this source tree's `scripts/netlab.sh`, else the installed one.
    private static func netlabScript(_ option: String?) -> String {
        if let option { return absolute(option) }
        let candidates = [NetLab.defaultScript, "/usr/local/share/peersync/netlab.sh", "/usr/share/peersync/netlab.sh"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? NetLab.defaultScript
    }

    /// This `peerd`, which the hosts run by absolute path.
    private static func executable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
