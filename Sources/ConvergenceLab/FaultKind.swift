/// The kinds of fault `peerd-lab` can schedule (docs/lab.md, "Faults").
public enum FaultKind: String, CaseIterable, Sendable, Codable {
    /// A group of hosts moved to a bridge of its own: cut off from the rest, mDNS included.
    case partition
    /// A token-bucket rate limit (`tc tbf`) on a host's link.
    case rate
    /// D ms added each way to every frame of a host's link, by a userspace frame relay (`peerd-lab-link`) in the
    /// bridge namespace: this kernel has no netem.
    case delay
    /// Random loss of a share of a host's packets, both ways (`nft numgen random`).
    case loss
    /// `kill -9` of a node's daemon, restarted when the fault heals.
    case kill
    /// SIGSTOP of a node's daemon, SIGCONT when the fault heals.
    case stop
    /// A crash (SIGKILL) of a host's avahi-daemon, restarted when the fault heals.
    case avahi
    /// A node restarted with its wall clock set behind or ahead (`--clock-offset-ms`), restarted without it when
    /// the fault heals.
    case clock

    /// Whether the fault stops or restarts the node's daemon, so that no two of them may hit one node at once.
    var holdsDaemon: Bool { self == .kill || self == .stop || self == .clock }

    /// Parses `--faults`: `all` or kinds separated by commas.
    public static func parseList(_ text: String) throws -> [FaultKind] {
        if text == "all" { return allCases }
        var kinds: [FaultKind] = []
        for word in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kind = FaultKind(rawValue: String(word)) else {
                let known = allCases.map(\.rawValue).joined(separator: ", ")
                throw LabUsageError("--faults: unknown fault kind \"\(word)\"; known: all, \(known)")
            }
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        return kinds
    }
}

/// A `peerd-lab` request that cannot run as given (exit 2).
public struct LabUsageError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
