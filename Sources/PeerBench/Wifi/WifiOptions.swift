import Foundation

/// What `peerd-bench wifi` measures, read from the command line.
struct WifiOptions {
    /// Events in the source replica A that a fresh B catches up from.
    var events = 1_000_000
    /// The `tc tbf` rate of each host's link, as `tc` reads it (`20mbit`, `5000kbit`).
    var rate = "20mbit"
    /// Percent of the packets dropped at random, each way.
    var lossPercent = 0.5
    /// Megabytes (10^6) of the raw TCP transfer that measures the link itself.
    var probeMegabytes = 20
    /// The `peerd` binary under test.
    var peerd = ""
    /// Where the lab's work directory goes (kept); nil means a temporary directory, removed at the end.
    var directory: String?
}
