import Foundation

/// What `peerd-bench lab` measures, read from the command line.
///
/// ```
/// peerd-bench lab [--peerd PATH] [--probe PATH] [--events N] [--runs N] [--dir DIR]
/// ```
struct LabOptions {
    /// The `peerd` binary under test; nil means the one next to `peerd-bench`.
    var peerd: String?
    /// The `mdns-probe` binary; nil means the one next to `peerd-bench`.
    var probe: String?
    /// Events the existing replica holds when a new host arrives.
    var events = 500
    /// Arrivals per avahi cache state, and discovery rounds of `mdns-probe`.
    var runs = 5
    /// Where the labs' work directories go (kept); nil means temporary directories, removed at the end.
    var directory: String?
    /// `--help` was given: print `usage` and do nothing else.
    var helpRequested = false

    /// The text printed for `peerd-bench lab --help`.
    static let usage = """
        usage: peerd-bench lab [--peerd PATH] [--probe PATH] [--events N] [--runs N] [--dir DIR]

        Discovery and first sync across hosts: `peerd run` (and `mdns-probe`) in the hosts of
        scripts/netlab.sh, network namespaces on one bridge, each with its own D-Bus and avahi-daemon.
        Needs root, iproute2, util-linux, dbus, avahi-daemon and avahi-utils.

          --peerd PATH  the peerd binary to measure (default: the peerd next to peerd-bench)
          --probe PATH  the mdns-probe binary (default: the mdns-probe next to peerd-bench)
          --events N    events the existing host holds when a new one arrives (default 500)
          --runs N      arrivals with a warm and with a cold avahi cache, and mdns-probe rounds (default 5)
          --dir DIR     where the labs' work directories go, kept afterwards with every log
                        (default: temporary directories, removed at the end)

        The report (Markdown) goes to standard output, progress to standard error. $PEERSYNC_NETLAB
        names another lab script. Exit 1 when a figure misses what the daemon promises (see "Checks").
        """

    /// Parses the arguments that follow `lab`.
    static func parse(_ arguments: [String]) throws -> LabOptions {
        var options = LabOptions()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--peerd":
                options.peerd = try BenchOptions.value(after: flag, in: &remaining)
            case "--probe":
                options.probe = try BenchOptions.value(after: flag, in: &remaining)
            case "--events":
                options.events = try BenchOptions.count(try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--runs":
                options.runs = try BenchOptions.count(try BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--dir":
                options.directory = try BenchOptions.value(after: flag, in: &remaining)
            case "--help", "-h":
                options.helpRequested = true
            default:
                throw UsageError("lab: unknown argument \(flag) (see `peerd-bench lab --help`)")
            }
        }
        return options
    }
}
