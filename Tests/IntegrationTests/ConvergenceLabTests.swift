import Foundation
import LabReport
import TestSupport
import Testing

/// `peerd-lab` beside the test binary (it finds `peerd`, `peerd-lab-link` and `netlab.sh` beside itself).
enum PeerLab {
    static let executable = Executables.url("peerd-lab").path

    /// Why the lab's tests cannot run here, or nil.
    static let unavailableReason = NetLab.unavailableReason(
        executables: [Lab.peerd, executable, Executables.url("peerd-lab-link").path])
}

/// `peerd-lab` as a user runs it: real nodes on netlab hosts under seeded
/// faults and a workload of conflicting writes, then its checks. A healthy
/// run must pass every check and exit 0; a run with a planted divergence
/// must fail, name the node and exit 1. Every wait reads the report file or
/// the run's JSON progress, never its words.
@Suite(
    "peerd-lab: a convergence lab of real nodes under faults, and one that must fail",
    .serialized,
    .disabled(if: PeerLab.unavailableReason != nil, Comment(rawValue: PeerLab.unavailableReason ?? ""))
)
struct ConvergenceLabTests {

    /// Runs `peerd-lab ARGUMENTS --report DIR` into `directory`; returns its result and the decoded report.
    func lab(_ arguments: [String], reportingTo directory: URL) async throws -> (
        result: ProcessResult, report: LabReport
    ) {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: PeerLab.executable), arguments + ["--report", directory.path], timeout: .seconds(400))
        let data = try Data(contentsOf: directory.appendingPathComponent("lab-report.json"))
        return (result, try LabReport.decode(data))
    }

    /// The run's `report.html` in headless chromium: a screenshot of more
    /// than a blank page, and every node's lane and row in the DOM.
    func expectTimelineRenders(_ directory: URL, nodes: [String]) async throws {
        let browser = try HeadlessBrowser()
        let html = directory.appendingPathComponent("lab-report.html")
        let png = directory.appendingPathComponent("report.png")
        try await browser.screenshot(of: html, to: png, width: 1400, height: 1000)
        let screenshot = try Data(contentsOf: png)
        #expect(PNGHeader(screenshot) == PNGHeader(width: 1400, height: 1000))
        #expect(screenshot.count > 20_000, "a screenshot of \(screenshot.count) bytes is too small to show a timeline")
        let dom = try await browser.dom(of: html)
        #expect(dom.contains("<svg class=\"timeline\""))
        for node in nodes {
            #expect(dom.contains("<g class=\"lane\" data-node=\"\(node)\">"), "no lane for \(node)")
        }
    }

    @Test("5 nodes under a minute of every fault kind and 25 writes a second converge: exit 0, every check passed")
    func healthyRun() async throws {
        let directory = try TemporaryDirectory()
        let (result, report) = try await lab(
            ["--nodes", "5", "--duration", "60s", "--seed", "11"], reportingTo: directory.url("report"))
        #expect(result.status == 0, "\(result)")
        #expect(report.passed, "\(report.checks.filter { !$0.passed })")
        #expect(
            Set(report.checks.map(\.name)) == [
                "converged-after-heal", "same-state", "same-events", "acknowledged-writes",
                "projections-match-fold", "no-forks", "idempotent-retries",
            ])
        #expect(report.configuration.seed == 11 && report.configuration.nodes == 5)
        #expect(report.configuration.rate == 25)
        #expect(report.configuration.unavailable == nil, "a debug peerd has --clock-offset-ms")
        #expect(report.nodes.map(\.name) == ["n1", "n2", "n3", "n4", "n5"])
        #expect(Set(report.nodes.map(\.stateHash)).count == 1)
        #expect(Set(report.faults.map(\.kind)).count >= 4, "\(report.faults.map(\.kind))")
        #expect(report.faults.allSatisfy { $0.endMs >= $0.startMs && $0.endMs <= report.lastHealMs })
        // About 25 a second over the minute; those to killed or stopped nodes, and edits of held or deleted
        // items, are refused.
        #expect(report.writes.count > 1_000, "\(report.writes.count) writes")
        #expect(report.writes.filter(\.acknowledged).count > 600, "\(report.acknowledgedWrites) acknowledged")
        #expect(
            Set(report.writes.map(\.kind)).isSuperset(of: [
                "create", "rename", "quantity", "note", "delete", "undo", "retry", "claim", "takeover", "release",
            ]))
        let conflicts = try #require(report.conflicts)
        #expect(conflicts.concurrentEdits > 50, "\(conflicts)")
        #expect(conflicts.editsAgainstDelete > 0 && conflicts.undos > 0, "\(conflicts)")
        #expect(conflicts.claims > 0 && conflicts.takeovers > 0 && conflicts.refusedByHolder > 0, "\(conflicts)")
        #expect(conflicts.claimsOverruled != nil && conflicts.droppedEvents != nil)
        #expect(report.samples.count > 100)
        let converged = try #require(report.convergedAtMs)
        #expect(converged >= report.lastHealMs)
        for node in report.nodes {
            #expect(node.convergedAfterHealMs != nil, "\(node.name)")
            #expect(node.events > 0 && node.bytesSent > 0 && node.bytesReceived > 0, "\(node)")
            #expect(node.peakRSSBytes > 1_000_000, "\(node.name) peak RSS \(node.peakRSSBytes)")
        }
        // What it prints is the report's own table.
        #expect(result.stdout.contains(TerminalTable(report).text), "\(result.stdout)")
        if HeadlessBrowser.unavailableReason == nil {
            try await expectTimelineRenders(directory.url("report"), nodes: report.nodes.map(\.name))
        }
    }

    @Test("an event removed from one node's file while it is stopped: the checks fail and name the node, exit 1")
    func plantedDivergenceFails() async throws {
        let directory = try TemporaryDirectory()
        let (result, report) = try await lab(
            [
                "--nodes", "3", "--duration", "15s", "--seed", "5", "--faults", "partition,kill",
                "--plant", "divergence", "--settle", "20s",
            ], reportingTo: directory.url("report"))
        #expect(result.status == 1, "\(result)")
        #expect(!report.passed)
        let sameEvents = try #require(report.checks.first { $0.name == "same-events" })
        #expect(!sameEvents.passed)
        #expect(sameEvents.details.count == 1 && sameEvents.details[0].hasPrefix("n3 lacks 1 of"), "\(sameEvents)")
        #expect(result.stdout.contains(TerminalTable(report).text), "\(result.stdout)")
        #expect(report.faults.contains { $0.kind == "plant" && $0.nodes == ["n3"] })
    }

    @Test(
        "installed in bin/ with netlab.sh in share/peersync/, beside a peerd without --clock-offset-ms: no clock faults, said in the report"
    )
    func releasePeerdLeavesClockOut() async throws {
        let directory = try TemporaryDirectory()
        let bin = directory.url("bin")
        let share = directory.url("share/peersync")
        for folder in [bin, share] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        for program in ["peerd-lab", "peerd-lab-link"] {
            try FileManager.default.copyItem(at: Executables.url(program), to: bin.appendingPathComponent(program))
        }
        try FileManager.default.copyItem(
            atPath: NetLab.defaultScript, toPath: share.appendingPathComponent("netlab.sh").path)
        // A release peerd: refuses the test option as an unknown option (exit 2), and is the debug peerd otherwise.
        let peerd = bin.appendingPathComponent("peerd")
        try Data(
            """
            #!/bin/sh
            for word in "$@"; do [ "$word" = --clock-offset-ms ] && { echo "unknown option $word" >&2; exit 2; }; done
            exec \(Lab.peerd) "$@"

            """.utf8
        ).write(to: peerd)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: peerd.path)

        let report = directory.url("report")
        let result = try await ChildProcess.run(
            bin.appendingPathComponent("peerd-lab"),
            ["--nodes", "2", "--duration", "12s", "--seed", "2", "--faults", "clock,kill", "--report", report.path],
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"], timeout: .seconds(200))
        let written = try LabReport.decode(Data(contentsOf: report.appendingPathComponent("lab-report.json")))
        #expect(result.status == 0, "\(result)")
        #expect(written.passed)
        #expect(written.configuration.faults == ["kill"])
        #expect(written.configuration.unavailable?.keys.sorted() == ["clock"])
        #expect(!written.faults.contains { $0.kind == "clock" })
        #expect(written.faults.contains { $0.kind == "kill" }, "the rest of the run happened")
    }

    @Test("Ctrl-C while the faults run: exit 130, the lab's namespaces and its note in /run/peerd-lab are gone")
    func interruptedRunTakesItsHostsDown() async throws {
        let directory = try TemporaryDirectory()
        let lab = try ChildProcess(
            URL(fileURLWithPath: PeerLab.executable),
            [
                "--nodes", "2", "--duration", "60s", "--seed", "3", "--report", directory.url("report").path,
                "--progress", "json",
            ],
            name: "peerd-lab")
        // The run notes its prefix and pid once its hosts are up.
        var prefix: String?
        try await Poll.eventually("the lab notes its hosts in /run/peerd-lab", timeout: .seconds(60)) {
            let noted = (try? FileManager.default.contentsOfDirectory(atPath: "/run/peerd-lab")) ?? []
            prefix = noted.first { name in
                let text = (try? String(contentsOfFile: "/run/peerd-lab/\(name)", encoding: .utf8)) ?? ""
                return text.hasPrefix("\(lab.pid)\n")
            }
            return prefix != nil
        }
        let noted = try #require(prefix)
        try await Poll.eventually("its nodes acknowledge writes", timeout: .seconds(60)) {
            Self.progress(lab.stderr.text).contains { $0.phase == "faults" && $0.acknowledged > 0 }
        }
        let ended = try lab.stop(with: SIGINT, timeout: .seconds(90))
        #expect(ended.exitCode == 130, "\(ended)\n\(lab.stderr.text)")
        #expect(!FileManager.default.fileExists(atPath: "/run/peerd-lab/\(noted)"))
        let namespaces = try await ChildProcess.run(URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "list"])
        #expect(!namespaces.stdout.split(separator: "\n").contains { $0.hasPrefix(noted) }, "\(namespaces.stdout)")
    }

    /// The states of `--progress json` in `stderr`: its lines that decode as one (notes do not).
    static func progress(_ stderr: String) -> [ProgressState] {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return stderr.split(separator: "\n").compactMap { try? decoder.decode(ProgressState.self, from: Data($0.utf8)) }
    }

    /// The fields of a `--progress json` line the tests read (docs/lab.md, "Progress").
    struct ProgressState: Decodable {
        var phase: String
        var atMs: Int64
        var writes: Int
        var acknowledged: Int
    }
}

/// `peerd-lab`'s usage mistakes, which need no root: exit 2 and one line that starts with `peerd-lab:`.
struct PeerLabUsageTests {
    @Test("bad options exit 2 with one clear line, before anything runs")
    func usageErrors() async throws {
        for arguments in [
            [], ["--nodes", "1"], ["--nodes", "3", "--faults", "netem"], ["--nodes", "3", "--duration", "soon"],
            ["--nodes", "3", "--plant", "fork"], ["--nodes", "3", "--rate", "0"],
            ["--nodes", "3", "--progress", "xml"],
            ["--nodes", "3", "--colour", "red"], ["--nodes", "3", "extra"],
        ] {
            let result = try await ChildProcess.run(URL(fileURLWithPath: PeerLab.executable), arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
            #expect(arguments.isEmpty || result.stderr.hasPrefix("peerd-lab: "), "\(arguments): \(result)")
        }
        let help = try await ChildProcess.run(URL(fileURLWithPath: PeerLab.executable), ["--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("usage: peerd-lab --nodes N"))
    }
}
