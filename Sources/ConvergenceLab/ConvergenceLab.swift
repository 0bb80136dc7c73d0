import ChildProcesses
import Foundation
import LabReport
import NetworkLab

/// `peerd-lab`: N real nodes on network hosts under a seeded schedule of
/// faults and a seeded workload, then checks that they converged
/// (docs/lab.md).
///
/// ```swift
/// let configuration = LabConfiguration(peers: 5, relays: 0, durationMs: 60_000, seed: 7,
///                                      faults: FaultKind.allCases, netlab: script, peerd: peerd)
/// let outcome = try await ConvergenceLab.run(configuration, progress: ProgressLine())
/// exit(outcome.report.passed ? 0 : 1)
/// ```
public enum ConvergenceLab {
    /// What a run gives: its report, the directory the report files are in, and the plain summary.
    public struct Outcome: Sendable {
        public var report: LabReport
        public var directory: URL
        public var summary: String
    }

    /// Why a lab cannot run here, or nil: root, the netlab tools, `tc`, `curl`, `nft` (for packet loss),
    /// `sqlite3` (for a planting), and `peerd-lab-link` (for added delay).
    public static func unavailableReason(_ configuration: LabConfiguration) -> String? {
        guard FileManager.default.isExecutableFile(atPath: configuration.netlab) else {
            return "no netlab script at \(configuration.netlab) (give --netlab PATH or set PEERSYNC_NETLAB)"
        }
        var executables = [configuration.peerd]
        if configuration.faults.contains(.delay) {
            guard let link = configuration.labLink else { return "the delay fault needs peerd-lab-link" }
            executables.append(link)
        }
        if let reason = NetLab.unavailableReason(script: configuration.netlab, executables: executables) {
            return reason
        }
        var tools = ["/usr/sbin/ip", "/usr/sbin/tc", "/usr/bin/curl", "/usr/bin/nsenter"]
        if configuration.plantDivergence { tools.append("/usr/bin/sqlite3") }
        if configuration.faults.contains(.loss) { tools.append("/usr/sbin/nft") }
        for tool in tools where !FileManager.default.isExecutableFile(atPath: tool) {
            return "the lab needs \(tool) (packages iproute2, curl, util-linux, nftables, sqlite3)"
        }
        return nil
    }

    /// Whether `peerd` takes `run --clock-offset-ms` (a debug build's test option, docs/lab.md): a release
    /// build refuses the option as a usage mistake (exit 2) before it looks at its data directory, a debug
    /// build gets past it and fails on the data directory that cannot exist.
    public static func peerdTakesClockOffset(_ peerd: String) async -> Bool {
        let probe = try? await ChildProcess.run(
            URL(fileURLWithPath: peerd),
            ["run", "--clock-offset-ms", "0", "--http", "off", "--data", "/dev/null/peerd-lab-probe"])
        guard let probe else { return false }
        return probe.status != 2 && probe.status != 0
    }

    /// Runs the lab and writes its reports; the lab's hosts are taken down whatever happens,
    /// also when the task is cancelled (Ctrl-C).
    public static func run(_ asked: LabConfiguration, progress: ProgressLine) async throws -> Outcome {
        var configuration = asked
        var unavailable: [String: String] = [:]
        if configuration.faults.contains(.clock), !(await peerdTakesClockOffset(configuration.peerd)) {
            // A release peerd: the run does everything else, and its report says what it left out.
            configuration.faults.removeAll { $0 == .clock }
            unavailable[FaultKind.clock.rawValue] =
                "\(configuration.peerd) has no --clock-offset-ms (a release build): no clock faults in this run; "
                + "a debug build (`swift build --product peerd`) has it"
            progress.say("peerd-lab: \(unavailable[FaultKind.clock.rawValue]!)")
        }
        let plan = LabPlan.make(
            seed: configuration.seed, peers: configuration.peers, relays: configuration.relays,
            durationMs: configuration.durationMs, kinds: configuration.faults, rate: configuration.rate)
        progress.say(
            "peerd-lab: seed \(configuration.seed), \(configuration.peers) nodes, \(configuration.relays) relays, "
                + "\(plan.faults.count) faults, \(plan.writes.count) writes planned (\(configuration.rate) a second)")
        for prefix in await LabLeftovers.sweep(script: configuration.netlab) {
            progress.say("took down the hosts of an earlier lab that ended without doing so (prefix \(prefix))")
        }
        if let keep = configuration.keep {
            try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        }
        // Forgotten once the hosts are down, whether the run passed, failed or broke.
        var noted: String?
        defer { if let noted { LabLeftovers.forget(prefix: noted) } }
        let (report, notes, workDirectory) = try await NetLab.with(
            hosts: configuration.peers + configuration.relays, prefix: "pl", network: "10.83",
            peerd: configuration.peerd,
            patience: .seconds(30), directory: configuration.keep, script: configuration.netlab
        ) { lab in
            try LabLeftovers.note(prefix: lab.prefix, state: lab.path("lab"))
            noted = lab.prefix
            let run = LabRun(
                configuration: configuration, plan: plan, lab: lab, progress: progress, unavailable: unavailable)
            do {
                return (try await run.run(), run.notes, lab.directory)
            } catch {
                progress.finish()
                throw error
            }
        }
        let directory = URL(fileURLWithPath: configuration.report ?? defaultReportDirectory(configuration.seed))
        var extra = notes
        if configuration.keep != nil { extra.append("kept: \(workDirectory.path)") }
        let summary = try ReportFiles.write(report, extra: extra, to: directory)
        return Outcome(report: report, directory: directory, summary: summary)
    }

    /// `peerd-lab-SEED-YYYYMMDD-HHMMSS` in the current directory.
    static func defaultReportDirectory(_ seed: UInt64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return "peerd-lab-\(seed)-\(formatter.string(from: Date()))"
    }
}
