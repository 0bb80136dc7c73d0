import Glibc

/// How many connections the process's descriptor limit can carry: the sync
/// peers' and the HTTP server's.
///
/// Each connection holds one descriptor. When the soft limit (often 1024)
/// is too low for the connections wanted plus `reserved`, it is raised
/// towards the hard limit; when even the hard limit is too low, fewer
/// connections are allowed, so that accepting one never fails for lack of
/// a descriptor that the database or sync needs. Peers are budgeted first
/// (`peerConnections`), the HTTP server with what they leave (`connections`).
///
/// ```swift
/// let peers = DescriptorBudget.peerConnections(wanted: 2048, handshakes: 64, http: 1024)
/// let http = DescriptorBudget.connections(wanted: 1024, besides: UInt32(peers + 64))
/// ```
enum DescriptorBudget {
    /// Descriptors left for everything else: the database files (with WAL
    /// and shared memory, twice: sync's and the API's connection), the sync
    /// listener, libmicrohttpd's epoll and wake-up pipe, the log and pipes.
    static let reserved: rlim_t = 256
    /// HTTP connections allowed however low the limit is.
    static let minimum: UInt32 = 32
    /// Peer connections allowed however low the limit is.
    static let minimumPeers = 16

    /// `RLIM_INFINITY`, which Swift does not import.
    private static let unlimited = rlim_t.max

    /// The HTTP connections the limit can carry beside `besides` other
    /// descriptors (the peers' and the handshakes').
    static func connections(wanted: UInt32, besides: UInt32 = 0) -> UInt32 {
        let needed = rlim_t(wanted) + reserved + rlim_t(besides)
        guard let limit = softLimit(raisedTowards: needed), limit < needed else { return wanted }
        let spare = limit > reserved + rlim_t(besides) ? limit - reserved - rlim_t(besides) : 0
        return max(minimum, UInt32(min(spare, rlim_t(wanted))))
    }

    /// The peer connections the limit can carry beside `handshakes`
    /// connections in the handshake and `http` HTTP connections, of which
    /// the HTTP server may be left its `minimum`.
    static func peerConnections(wanted: Int, handshakes: Int, http: UInt32) -> Int {
        let needed = rlim_t(wanted) + rlim_t(handshakes) + rlim_t(http) + reserved
        guard let limit = softLimit(raisedTowards: needed), limit < needed else { return wanted }
        let others = reserved + rlim_t(handshakes) + rlim_t(minimum)
        let spare = limit > others ? Int(limit - others) : 0
        return min(wanted, max(minimumPeers, spare))
    }

    /// The soft limit, raised towards `needed` (up to the hard limit) when
    /// lower; `nil` when unlimited or unreadable.
    static func softLimit(raisedTowards needed: rlim_t) -> rlim_t? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur != unlimited && limit.rlim_cur < needed {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == unlimited ? needed : min(needed, limit.rlim_max)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == unlimited ? nil : limit.rlim_cur
    }
}
