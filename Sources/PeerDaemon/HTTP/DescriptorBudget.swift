import Glibc

/// How many HTTP connections the process's descriptor limit can carry.
///
/// Each connection holds one descriptor. When the soft limit (often 1024)
/// is too low for the connections wanted plus `reserved`, it is raised
/// towards the hard limit; when even the hard limit is too low, fewer
/// connections are allowed, so that accepting one never fails for lack of
/// a descriptor that the database or sync needs.
///
/// ```swift
/// let limit = DescriptorBudget.connections(wanted: 1024)  // 1024 with a soft limit of 1280 or more
/// ```
enum DescriptorBudget {
    /// Descriptors left for everything else: the database files (with WAL
    /// and shared memory, twice: sync's and the API's connection), the sync
    /// listener and its peers, libmicrohttpd's epoll and wake-up pipe, the
    /// log and pipes.
    static let reserved: rlim_t = 256
    /// Connections allowed however low the limit is.
    static let minimum: UInt32 = 32

    /// `RLIM_INFINITY`, which Swift does not import.
    private static let unlimited = rlim_t.max

    static func connections(wanted: UInt32) -> UInt32 {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return wanted }
        let needed = rlim_t(wanted) + reserved
        if limit.rlim_cur != unlimited && limit.rlim_cur < needed {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == unlimited ? needed : min(needed, limit.rlim_max)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur != unlimited, limit.rlim_cur < needed else { return wanted }
        return max(minimum, UInt32(limit.rlim_cur > reserved ? limit.rlim_cur - reserved : 0))
    }
}
