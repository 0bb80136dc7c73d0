/// What a benchmark run measures, read from the command line.
///
/// ```
/// peerd-bench [--events 200000,1000000] [--quick] [--ingest-only] [--dir DIR] [--latency-samples 2000]
/// ```
struct BenchOptions {
    /// The log sizes to measure; every size gets its own fresh databases.
    var eventCounts: [Int] = [200_000, 1_000_000]
    /// Where the databases go; nil means a fresh temporary directory, removed at the end.
    var directory: String?
    /// How many single-event commits the latency rows time (each side).
    var latencySamples = 2_000
    /// Events per transaction in every batched row.
    var batchSize = 1_000
    /// The most items a workload touches (fewer for small runs; see `ItemWorkload`).
    var maxItems = 20_000
    /// Only the two raw baselines and the ingest rows: a short run to profile ingest.
    var ingestOnly = false

    /// The text printed for `--help` and after a usage error.
    static let usage = """
        usage: peerd-bench [--events N[,N...]] [--quick] [--ingest-only] [--dir DIR] [--latency-samples N]
               peerd-bench crash-writer --data FILE --count N

          --events N,...       log sizes to measure (default 200000,1000000)
          --quick              one small size (20000 events, 200 latency samples): seconds, not minutes
          --ingest-only        only the raw baselines and the ingest rows (to profile ingest)
          --dir DIR            work directory (default: a fresh temporary directory, removed at the end)
          --latency-samples N  single-event commits timed for the latency rows (default 2000)

        Other benchmarks (each has its own --help):
          peerd-bench sync       catch-up, live propagation and idle traffic between running daemons
          peerd-bench shell      strangers, slow clients and a 1M catch-up against running daemons
          peerd-bench thin       a thin client's push and pull rates against a running daemon
          peerd-bench topology   the same replicas as a mesh and around a relay
          peerd-bench lab        discovery and first sync across network namespaces (root)
          peerd-bench simulate-scale  anti-entropy rounds to converge for 8 to 256 simulated replicas
        """

    /// Parses the arguments that follow the program name.
    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--events":
                let list = try value(after: flag, in: &remaining)
                options.eventCounts = try list.split(separator: ",").map { try count(String($0), for: flag) }
                guard !options.eventCounts.isEmpty else { throw UsageError("--events needs at least one size") }
            case "--quick":
                options.eventCounts = [20_000]
                options.latencySamples = 200
            case "--ingest-only":
                options.ingestOnly = true
            case "--dir":
                options.directory = try value(after: flag, in: &remaining)
            case "--latency-samples":
                options.latencySamples = try count(try value(after: flag, in: &remaining), for: flag)
            case "--help", "-h":
                throw UsageError(nil)
            default:
                throw UsageError("unknown argument \(flag)")
            }
        }
        return options
    }

    /// The argument after `flag`.
    static func value(after flag: String, in remaining: inout ArraySlice<String>) throws -> String {
        guard let value = remaining.popFirst() else { throw UsageError("\(flag) needs a value") }
        return value
    }

    /// A positive count; `1_000_000` and `1000000` are both accepted.
    static func count(_ text: String, for flag: String) throws -> Int {
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else {
            throw UsageError("\(flag) needs a positive whole number, got \(text)")
        }
        return number
    }
}

/// A command line the program does not understand; `message` nil means `--help`.
struct UsageError: Error, CustomStringConvertible {
    var message: String?

    init(_ message: String?) { self.message = message }

    var description: String {
        message.map { "peerd-bench: \($0)\n\n\(BenchOptions.usage)" } ?? BenchOptions.usage
    }
}
