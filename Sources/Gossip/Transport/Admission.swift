import SyncProtocol

/// What a stranger may cost before it proves it holds the cluster key: how
/// many connections may be in the handshake at once (in all, and from one
/// address), how long a handshake may take from accept to done, and how
/// large a frame may be before it is done (the handshake's own frames are
/// at most 513 bytes).
public struct AdmissionLimits: Sendable, Hashable {
    /// A handshake not finished this long after the connection opened is cut.
    public var handshakeDeadlineMs: Int64 = 10_000
    /// Connections in the handshake at once; more are closed at accept.
    public var maxPending = 64
    /// Of those, from one remote address.
    public var maxPendingPerHost = 16
    /// The largest frame accepted before the handshake is done.
    public var maxPreHandshakeFrame = 1_024
    /// How long `accept` rests when the process is out of file descriptors.
    public var acceptPauseMs: Int64 = 250
    /// Refusals of one kind are logged once per this many milliseconds.
    public var refusalLogIntervalMs: Int64 = 10_000

    public init() {}
}

/// Why a connection was turned away before its session started; one kind
/// is logged once per interval (`RefusalLog`).
public enum RefusalKind: String, Sendable, Hashable, CaseIterable {
    /// More handshakes in progress than `maxPending`.
    case tooManyHandshakes = "too_many_handshakes"
    /// More handshakes from one address than `maxPendingPerHost`.
    case tooManyFromHost = "too_many_from_host"
    /// The handshake was not done by its deadline.
    case handshakeDeadline = "handshake_deadline"
    /// A frame too large, empty or of an unknown type before the handshake was done.
    case badFrame = "bad_frame"
    /// The handshake failed: wrong key, wrong version, a malformed or unexpected frame.
    case handshakeFailed = "handshake_failed"
    /// The stranger left before the handshake was done.
    case leftEarly = "left_early"
    /// `accept` failed: out of file descriptors, or of kernel memory.
    case acceptFailed = "accept_failed"
}

/// Connections in the handshake now, in all and per remote address.
struct PendingHandshakes: Sendable {
    private(set) var total = 0
    private var perHost: [String: Int] = [:]

    /// Counts a new connection from `host`, or says why it is refused.
    mutating func admit(_ host: String, limits: AdmissionLimits) -> RefusalKind? {
        if total >= limits.maxPending { return .tooManyHandshakes }
        if perHost[host, default: 0] >= limits.maxPendingPerHost { return .tooManyFromHost }
        total += 1
        perHost[host, default: 0] += 1
        return nil
    }

    /// A connection from `host` finished its handshake, or closed.
    mutating func finished(_ host: String) {
        guard let count = perHost[host] else { return }
        total -= 1
        perHost[host] = count > 1 ? count - 1 : nil
    }
}
