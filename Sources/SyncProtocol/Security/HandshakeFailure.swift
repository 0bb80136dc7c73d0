/// Why a handshake ended without session keys.
///
/// `reason` is for this node's log and status; `rejectReason` is what went
/// to the peer in a `.reject` frame (the `.send` comes right before the
/// `.fail` directive), or `nil` when nothing was sent.
public struct HandshakeFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What kind of failure, for a shell that reacts differently (a key
    /// mismatch will not heal by retrying soon; a dropped frame may).
    /// The raw value is the `cause` of a `connection.refused` log event.
    public enum Kind: String, Sendable, Equatable {
        /// The peer speaks another protocol version.
        case incompatibleVersion = "incompatible_version"
        /// The peer does not hold this cluster's key.
        case clusterKeyMismatch = "cluster_key_mismatch"
        /// A handshake frame of the wrong size or shape.
        case malformedFrame = "malformed_frame"
        /// A frame that does not belong in the current state.
        case unexpectedFrame = "unexpected_frame"
        /// The peer's ephemeral public key is unusable (a low-order point).
        case invalidPublicKey = "invalid_public_key"
        /// The peer sent a `.reject` frame.
        case refusedByPeer = "refused_by_peer"
        /// The shell called the machine out of order.
        case misuse
    }

    public var kind: Kind
    /// A sentence for this node's log.
    public var reason: String
    /// The reason sent to the peer in a `.reject` frame, if one was sent.
    public var rejectReason: String?

    public init(kind: Kind, reason: String, rejectReason: String? = nil) {
        self.kind = kind
        self.reason = reason
        self.rejectReason = rejectReason
    }

    public var description: String { "handshake failed: \(reason)" }

    /// The longest reason a `.reject` frame carries, in UTF-8 bytes.
    public static let maximumRejectReasonSize = 512

    /// The `.reject` frame carrying `reason`, cut to 512 bytes on a
    /// character boundary.
    static func rejectFrame(_ reason: String) -> Frame {
        var bytes: [UInt8] = []
        for character in reason {
            let encoded = Array(character.utf8)
            guard bytes.count + encoded.count <= maximumRejectReasonSize else { break }
            bytes += encoded
        }
        return Frame(type: .reject, body: bytes)
    }

    /// The peer's reason from a `.reject` body, made safe to log: at most
    /// 512 bytes, invalid UTF-8 replaced, control characters as `?`.
    static func peerReason(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(maximumRejectReasonSize), as: UTF8.self)
        let printable = String(
            text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return printable.isEmpty ? "no reason given" : printable
    }
}
