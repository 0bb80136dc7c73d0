import Foundation

/// What `peerd-bench shell` measures, read from the command line.
///
/// ```
/// peerd-bench shell [--peerd PATH] [--phases gossip,fds,http,status,catchup-live] [--events N] [--quick] [--dir DIR]
/// ```
struct ShellOptions {
    /// The phases, in the order they run.
    enum Phase: String, CaseIterable {
        case gossip
        case fds
        case http
        case status
        case catchUpLive = "catchup-live"
    }

    /// The `peerd` binary under test; nil means the one next to `peerd-bench`.
    var peerd: String?
    var phases = Phase.allCases
    /// Events in A for `catchup-live`.
    var events = 1_000_000
    /// Where the data directories and logs go; nil means a fresh temporary directory, removed at the end.
    var directory: String?
    /// `--help` was given: print `usage` and do nothing else.
    var helpRequested = false

    /// The text printed for `peerd-bench shell --help`.
    static let usage = """
        usage: peerd-bench shell [--peerd PATH] [--phases P,...] [--events N] [--quick] [--dir DIR]

        Black-box benchmark of a running `peerd run`: it only starts peerd processes, opens TCP
        connections, speaks HTTP to the daemon's API and reads /proc/PID, so that it runs unchanged
        against an old and a new binary.

          --peerd PATH   the peerd binary to measure (default: the peerd next to peerd-bench)
          --phases P,... some of \(Phase.allCases.map(\.rawValue).joined(separator: ",")) (default: all, in that order)
          --events N     events in the source replica of catchup-live (default 1000000)
          --quick        catchup-live with 100000 events
          --dir DIR      work directory, kept afterwards with every daemon's log
                         (default: a fresh temporary directory, removed at the end)

        The report (Markdown) goes to standard output, progress to standard error.
        """

    /// Parses the arguments that follow `shell`.
    static func parse(_ arguments: [String]) throws -> ShellOptions {
        var options = ShellOptions()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--peerd":
                options.peerd = try BenchOptions.value(after: flag, in: &remaining)
            case "--phases":
                let list = try BenchOptions.value(after: flag, in: &remaining).split(separator: ",")
                options.phases = try list.map { name in
                    guard let phase = Phase(rawValue: String(name)) else {
                        throw UsageError("shell: unknown phase \(name) (see `peerd-bench shell --help`)")
                    }
                    return phase
                }
                // Always in the documented order, each once.
                options.phases = Phase.allCases.filter(options.phases.contains)
            case "--events":
                options.events = try BenchOptions.count(try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--quick":
                options.events = 100_000
            case "--dir":
                options.directory = try BenchOptions.value(after: flag, in: &remaining)
            case "--help", "-h":
                options.helpRequested = true
            default:
                throw UsageError("shell: unknown argument \(flag) (see `peerd-bench shell --help`)")
            }
        }
        return options
    }
}
