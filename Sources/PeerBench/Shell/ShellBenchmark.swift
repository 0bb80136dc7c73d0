import ChildProcesses
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `peerd-bench shell`: a black-box benchmark of `peerd run` processes,
/// phase by phase (`ShellPhase`); each phase's Markdown section is
/// printed as soon as it is done, so a later failure keeps the earlier ones.
struct ShellBenchmark {
    let peerd: String
    let phases: [ShellPhase]
    /// Events in A for `catchup-live`.
    let events: Int
    let directory: String?

    /// Runs the chosen phases and prints the report.
    func run() throws {
        ShellBenchmark.raiseDescriptorLimit()
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench shell: work directory \(workspace.path), peerd at \(peerd)")
        Markdown.emit([
            "## peerd-bench shell: `\(peerd)` (\(ShellBenchmark.identity(of: peerd))), run \(Markdown.now)",
            "",
            Markdown.command,
            "- machine: \(Report.machine); every daemon on 127.0.0.1, `--no-mdns --log-level info`",
            "- latencies in ms; p50 / p99 / max are nearest-rank; \"—\" where a figure does not apply",
        ])
        for phase in phases {
            let started = ContinuousClock.now
            let loadBefore = ShellBenchmark.loadAverage
            progress("== phase \(phase.rawValue) ==")
            var outcome = attempt(phase, peerd: peerd, workspace: workspace)
            var discarded: [String] = []
            while outcome.killedFromOutside && discarded.count < ShellBenchmark.retries {
                let note = "attempt \(discarded.count + 1) discarded: " + outcome.exits.joined(separator: "; ")
                progress("phase \(phase.rawValue): \(note); running it again")
                discarded.append(note)
                outcome = attempt(phase, peerd: peerd, workspace: workspace)
            }
            var lines = outcome.lines
            let warnings = outcome.exits.map { "- **warning**: \($0)" } + discarded.map { "- \($0)" }
            if !warnings.isEmpty { lines += [""] + warnings }
            let seconds = Figure.seconds((ContinuousClock.now - started).seconds, digits: 0)
            lines += [
                "",
                "_Phase \(phase.rawValue) took \(seconds) s; load average (1 min) \(loadBefore) before, "
                    + "\(ShellBenchmark.loadAverage) after, on \(ProcessInfo.processInfo.activeProcessorCount) cores._",
            ]
            Markdown.emit(lines)
        }
    }

    /// How often a phase whose daemons were killed from outside (SIGKILL) runs again.
    static let retries = 2

    /// One run of a phase: its section, the daemons that exited on their own, and whether one was killed from outside.
    private func attempt(_ phase: ShellPhase, peerd: String, workspace: Workspace)
        -> (lines: [String], exits: [String], killedFromOutside: Bool)
    {
        let cluster: LoopbackCluster
        do {
            cluster = try LoopbackCluster(phase: phase.rawValue, peerd: peerd, workspace: workspace)
        } catch {
            return (["### \(phase.rawValue)", "", "**The phase could not start**: \(error)"], [], false)
        }
        defer { cluster.stopAll() }
        var lines: [String]
        do {
            lines = try run(phase, in: cluster)
        } catch {
            lines = ["### \(phase.rawValue)", "", "**The phase failed**: \(error)"]
            progress("phase \(phase.rawValue) failed: \(error)")
        }
        return (lines, cluster.unexpectedExits(), cluster.killedFromOutside)
    }

    private func run(_ phase: ShellPhase, in cluster: LoopbackCluster) throws -> [String] {
        switch phase {
        case .gossip: try GossipPhase(cluster: cluster).run()
        case .fds: try DescriptorPhase(cluster: cluster).run()
        case .http: try HTTPLoadPhase(cluster: cluster).run()
        case .status: try StatusPhase(cluster: cluster).run()
        case .catchUpLive: try CatchUpLivePhase(cluster: cluster, events: events).run()
        }
    }

    /// The 1-minute load average (`/proc/loadavg`): other work on the machine skews the figures.
    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.map(String.init) ?? "?"
    }

    /// Raises this process's soft limit of open files to its hard limit.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            progress("peerd-bench shell: cannot raise the open-files limit: \(ProbeError.text(errno))")
        }
    }

    /// What tells one build from another cheaply: size, modification time
    /// and the start of its SHA-256 (from `sha256sum`, when it answers within 10 s).
    static func identity(of binary: String) -> String {
        let attributes = try? FileManager.default.attributesOfItem(atPath: binary)
        let size = (attributes?[.size] as? NSNumber).map { Report.grouped($0.doubleValue) } ?? "?"
        let modified = (attributes?[.modificationDate] as? Date).map {
            $0.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false)) + "Z"
        }
        var parts = ["\(size) bytes", "modified \(modified ?? "?")"]
        if let digest = sha256(of: binary) { parts.append("sha256 \(digest.prefix(16))…") }
        return parts.joined(separator: ", ")
    }

    private static func sha256(of file: String) -> String? {
        let result = try? ChildProcess.run(URL(fileURLWithPath: "/usr/bin/sha256sum"), [file], timeout: .seconds(10))
        guard let result, result.status == 0 else { return nil }
        return result.stdout.split(separator: " ").first.map(String.init)
    }
}

/// The phases of `peerd-bench shell`, in the order they run.
enum ShellPhase: String, CaseIterable, Sendable {
    case gossip
    case fds
    case http
    case status
    case catchUpLive = "catchup-live"
}
