import Foundation
import LabReport
import TestSupport
import Testing

/// `peerd lab` as a user runs it: real nodes on netlab hosts under seeded
/// faults, then its checks. A healthy run must pass every check and exit 0;
/// a run with a planted divergence must fail, name the node and exit 1.
@Suite(
    "peerd lab: a convergence lab of real nodes under faults, and one that must fail",
    .serialized,
    .disabled(if: Lab.unavailableReason != nil, Comment(rawValue: Lab.unavailableReason ?? ""))
)
struct ConvergenceLabTests {
    /// Runs `peerd lab ARGUMENTS --report DIR` into `directory`; returns its result and the decoded report.
    func lab(_ arguments: [String], reportingTo directory: URL) async throws -> (
        result: ProcessResult, report: LabReport
    ) {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: Lab.peerd), ["lab"] + arguments + ["--report", directory.path],
            timeout: .seconds(400))
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

    @Test("5 nodes under a minute of every fault kind converge: exit 0, every check passed, figures filled")
    func healthyRun() async throws {
        let directory = try TemporaryDirectory()
        let (result, report) = try await lab(
            ["--nodes", "5", "--duration", "60s", "--seed", "11"], reportingTo: directory.url("report"))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("seed 11"), "the seed is printed")
        #expect(report.passed, "\(report.checks.filter { !$0.passed })")
        #expect(
            Set(report.checks.map(\.name)) == [
                "converged-after-heal", "same-state", "same-events", "acknowledged-writes",
                "projections-match-fold", "no-forks", "idempotent-retries",
            ])
        #expect(report.configuration.seed == 11 && report.configuration.nodes == 5)
        #expect(report.nodes.map(\.name) == ["n1", "n2", "n3", "n4", "n5"])
        #expect(Set(report.nodes.map(\.stateHash)).count == 1)
        #expect(Set(report.faults.map(\.kind)).count >= 4, "\(report.faults.map(\.kind))")
        #expect(report.faults.allSatisfy { $0.endMs >= $0.startMs && $0.endMs <= report.lastHealMs })
        #expect(report.writes.filter(\.acknowledged).count > 50, "\(report.writes.count) writes")
        #expect(Set(report.writes.map(\.kind)).isSuperset(of: ["create", "rename", "quantity", "retry"]))
        #expect(report.samples.count > 100)
        let converged = try #require(report.convergedAtMs)
        #expect(converged >= report.lastHealMs)
        for node in report.nodes {
            #expect(node.convergedAfterHealMs != nil, "\(node.name)")
            #expect(node.events > 0 && node.bytesSent > 0 && node.bytesReceived > 0, "\(node)")
            #expect(node.peakRSSBytes > 1_000_000, "\(node.name) peak RSS \(node.peakRSSBytes)")
        }
        #expect(result.stdout.contains("converged: every check passed"), "\(result.stdout)")
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
        #expect(result.stdout.contains("✘ same-events"), "\(result.stdout)")
        #expect(result.stdout.contains("n3 lacks 1 of"))
        #expect(report.faults.contains { $0.kind == "plant" && $0.nodes == ["n3"] })
    }

    @Test("Ctrl-C while the faults run: exit 130, the lab's namespaces and its note in /run/peerd-lab are gone")
    func interruptedRunTakesItsHostsDown() async throws {
        let directory = try TemporaryDirectory()
        let lab = try ChildProcess(
            URL(fileURLWithPath: Lab.peerd),
            ["lab", "--nodes", "2", "--duration", "60s", "--seed", "3", "--report", directory.url("report").path],
            name: "peerd lab")
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
        try await Poll.eventually("its nodes run", timeout: .seconds(60)) { lab.stderr.text.contains("writes") }
        let ended = try lab.stop(with: SIGINT, timeout: .seconds(90))
        #expect(ended.exitCode == 130, "\(ended)\n\(lab.stderr.text)")
        #expect(!FileManager.default.fileExists(atPath: "/run/peerd-lab/\(noted)"))
        let namespaces = try await ChildProcess.run(URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "list"])
        #expect(!namespaces.stdout.split(separator: "\n").contains { $0.hasPrefix(noted) }, "\(namespaces.stdout)")
    }
}
