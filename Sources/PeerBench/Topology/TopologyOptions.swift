import Foundation

/// What `peerd-bench topology` measures, read from the command line.
///
/// ```
/// peerd-bench topology [--sizes 5,20] [--events N] [--seed N] [--simulated-only] [--peerd PATH] [--dir DIR]
/// ```
struct TopologyOptions {
    var sizes = [5, 20]
    /// Live events each replica writes.
    var eventsPerReplica = 5
    /// Seed of the simulated runs.
    var seed: UInt64 = 1
    /// Only the simulator's table, no daemons.
    var simulatedOnly = false
    /// The `peerd` binary under test; nil means the one next to `peerd-bench`.
    var peerd: String?
    /// Where the data directories and logs go; nil means a fresh temporary directory, removed at the end.
    var directory: String?

    static let usage = """
        usage: peerd-bench topology [--sizes N,...] [--events N] [--seed N] [--simulated-only] [--peerd PATH] [--dir DIR]

        The same replicas as a full mesh and around one relay (the hub): connections, bytes sync sends
        per live event and while idle, and (hub) the time to fall back to the mesh after kill -9 of the
        relay. First in the simulator, then with real peerd processes on 127.0.0.1.

          --sizes N,...     replica counts (default 5,20)
          --events N        live events each replica writes (default 5)
          --seed N          seed of the simulated runs (default 1)
          --simulated-only  the simulator's table only
          --peerd PATH      the peerd binary to measure (default: the peerd next to peerd-bench)
          --dir DIR         work directory, kept afterwards with every daemon's log
                            (default: a fresh temporary directory, removed at the end)

        The report (Markdown) goes to standard output, progress to standard error.
        """

    /// Parses the arguments that follow `topology`.
    static func parse(_ arguments: [String]) throws -> TopologyOptions {
        var options = TopologyOptions()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--sizes":
                let list = try BenchOptions.value(after: flag, in: &remaining)
                options.sizes = try list.split(separator: ",").map { try BenchOptions.count(String($0), for: flag) }
                if options.sizes.contains(where: { $0 < 2 }) { throw UsageError("--sizes needs 2 or more replicas") }
            case "--events":
                options.eventsPerReplica = try BenchOptions.count(
                    try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--seed":
                options.seed = UInt64(
                    try BenchOptions.count(try BenchOptions.value(after: flag, in: &remaining), for: flag))
            case "--simulated-only":
                options.simulatedOnly = true
            case "--peerd":
                options.peerd = try BenchOptions.value(after: flag, in: &remaining)
            case "--dir":
                options.directory = try BenchOptions.value(after: flag, in: &remaining)
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                throw UsageError("topology: unknown argument \(flag) (see `peerd-bench topology --help`)")
            }
        }
        return options
    }
}
