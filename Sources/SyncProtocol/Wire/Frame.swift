/// One unit on the wire: a 4-byte big-endian length, a type byte, a body.
///
/// The length counts the type byte and the body. Handshake frames travel in
/// clear; after the handshake every frame is `.sealed`, and the message type
/// is inside the ciphertext.
///
/// ```swift
/// let bytes = Frame(type: .sealed, body: ciphertext).encoded()
/// ```
public struct Frame: Hashable, Sendable {
    /// What a frame carries, as its type byte says.
    public enum Kind: UInt8, Sendable {
        /// Initiator's opening: version and ephemeral public key.
        case handshakeInit = 1
        /// Responder's answer: version, ephemeral public key, key proof.
        case handshakeReply = 2
        /// Initiator's key proof.
        case handshakeFinish = 3
        /// A refusal in clear text (incompatible version, failed proof).
        case reject = 4
        /// An encrypted and authenticated message.
        case sealed = 5
    }

    public var type: Kind
    public var body: [UInt8]

    public init(type: Kind, body: [UInt8]) {
        self.type = type
        self.body = body
    }

    /// Bytes of the length prefix and the type byte.
    public static let headerSize = 5

    /// The largest frame (type byte and body) any peer may send: 4 MiB.
    public static let maximumSize = 4 << 20

    /// The frame as it goes on the wire.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Frame.headerSize + body.count)
        let length = UInt32(body.count + 1)
        bytes.append(contentsOf: [
            UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF),
        ])
        bytes.append(type.rawValue)
        bytes.append(contentsOf: body)
        return bytes
    }
}
