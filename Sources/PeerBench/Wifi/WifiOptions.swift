import Foundation

/// What `peerd-bench wifi` measures, read from the command line.
///
/// ```
/// peerd-bench wifi [--events N] [--rate RATE] [--loss PERCENT] [--probe-mb N] [--peerd PATH] [--dir DIR]
/// ```
struct WifiOptions {
    /// Events in the source replica A that a fresh B catches up from.
    var events = 1_000_000
    /// The `tc tbf` rate of each host's link, as `tc` reads it (`20mbit`, `5000kbit`).
    var rate = "20mbit"
    /// Percent of the packets dropped at random, each way.
    var lossPercent = 0.5
    /// Megabytes (10^6) of the raw TCP transfer that measures the link itself.
    var probeMegabytes = 20
    /// The `peerd` binary under test; nil means the one next to `peerd-bench`.
    var peerd: String?
    /// Where the lab's work directory goes (kept); nil means a temporary directory, removed at the end.
    var directory: String?
    /// `--help` was given: print `usage` and do nothing else.
    var helpRequested = false

    /// The text printed for `peerd-bench wifi --help`.
    static let usage = """
        usage: peerd-bench wifi [--events N] [--rate RATE] [--loss PERCENT] [--probe-mb N] [--peerd PATH] [--dir DIR]

        Catch-up over a Wi-Fi-like link: two hosts of scripts/netlab.sh (network namespaces), each host's
        eth0 shaped by `tc tbf` to RATE and host 1 dropping PERCENT of its packets each way (nftables). A raw
        TCP transfer measures the link first; then a fresh replica B on host 2 catches up from A on host 1.
        Needs root, iproute2, nftables, util-linux, dbus and avahi-daemon.

          --events N      events in A, with the workload of `peerd-bench sync` (default 1000000)
          --rate RATE     tbf rate of each host's link, in tc's units (default 20mbit)
          --loss PERCENT  random packet loss each way, in percent (default 0.5)
          --probe-mb N    megabytes of the raw TCP transfer that measures the link (default 20)
          --peerd PATH    the peerd binary to measure (default: the peerd next to peerd-bench)
          --dir DIR       where the lab's work directory goes, kept afterwards with every log
                          (default: a temporary directory, removed at the end)

        The report (Markdown) goes to standard output, progress to standard error.
        """

    /// Parses the arguments that follow `wifi`.
    static func parse(_ arguments: [String]) throws -> WifiOptions {
        var options = WifiOptions()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--events":
                options.events = try BenchOptions.count(try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--rate":
                options.rate = try BenchOptions.value(after: flag, in: &remaining)
                guard LinkShape.megabitsPerSecond(options.rate) != nil else {
                    throw UsageError("wifi: --rate needs e.g. 20mbit or 5000kbit, not \(options.rate)")
                }
            case "--loss":
                let text = try BenchOptions.value(after: flag, in: &remaining)
                guard let percent = Double(text), percent >= 0, percent < 100 else {
                    throw UsageError("wifi: --loss needs a percentage in [0, 100), not \(text)")
                }
                options.lossPercent = percent
            case "--probe-mb":
                options.probeMegabytes = try BenchOptions.count(
                    try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--peerd":
                options.peerd = try BenchOptions.value(after: flag, in: &remaining)
            case "--dir":
                options.directory = try BenchOptions.value(after: flag, in: &remaining)
            case "--help", "-h":
                options.helpRequested = true
            default:
                throw UsageError("wifi: unknown argument \(flag) (see `peerd-bench wifi --help`)")
            }
        }
        return options
    }
}
