/// The authenticated key exchange that opens every connection, as a pure
/// state machine: frames in, directives out, no sockets, clocks or
/// randomness (the ephemeral key pair is an input).
///
/// Three frames, then every frame is sealed:
///
/// ```
/// I → R  .handshakeInit    "PSYN" | version u16 BE | epk_I (32)
/// R → I  .handshakeReply   version u16 BE | epk_R (32) | proof_R (32)
/// I → R  .handshakeFinish  proof_I (32)
/// ```
///
/// Each proof is a MAC keyed through the cluster key over the X25519 secret
/// and the transcript, so only a holder of the cluster key can make it, and
/// the key never travels. Either side refuses with a `.reject` frame (a
/// UTF-8 reason in clear) and fails. See `docs/protocol.md`.
///
/// ```swift
/// var handshake = Handshake(role: .initiator, clusterKey: key, ephemeral: Handshake.ephemeralKeyPair())
/// perform(handshake.start())
/// while let frame = try decoder.next() { perform(handshake.receive(frame)) }
/// ```
///
/// The shell sends each `.send` frame in order, keeps the keys of
/// `.established`, and closes the connection after `.fail`. A responder
/// sends nothing but its reply before `.established`.
public struct Handshake: Sendable {
    /// Who opened the connection.
    public enum Role: Sendable, Equatable {
        /// The side that dialled: sends init and finish.
        case initiator
        /// The side that accepted: sends the reply.
        case responder
    }

    /// What the shell must do, in order.
    public enum Directive: Sendable, Equatable {
        /// Write this frame to the peer.
        case send(Frame)
        /// The peer is authenticated; seal and open every further frame with these keys.
        case established(SessionKeys)
        /// The handshake is over without keys; close the connection.
        case fail(HandshakeFailure)
    }

    enum State: Sendable, CustomStringConvertible {
        /// Initiator before `start()`.
        case ready
        /// Responder waiting for init.
        case awaitingInit
        /// Initiator sent init.
        case awaitingReply
        /// Responder sent its reply and waits for the initiator's proof.
        case awaitingFinish(expectedProof: SecretBytes, keys: SessionKeys)
        case established
        case failed(HandshakeFailure)

        var description: String {
            switch self {
            case .ready: "ready"
            case .awaitingInit: "awaitingInit"
            case .awaitingReply: "awaitingReply"
            case .awaitingFinish: "awaitingFinish"
            case .established: "established"
            case .failed(let failure): "failed(\(failure.reason))"
            }
        }
    }

    /// The first four bytes of every init: "PSYN".
    public static let magic: [UInt8] = Array("PSYN".utf8)

    public let role: Role
    /// The protocol version this side speaks and requires of the peer.
    public let version: UInt16
    private let clusterKey: ClusterKey
    private let publicKey: [UInt8]
    /// Dropped (and so wiped) once the shared secret is computed.
    private var ephemeral: EphemeralKeyPair?
    private(set) var state: State

    /// A handshake for one connection.
    ///
    /// - Parameters:
    ///   - ephemeral: a key pair made for this connection only.
    ///   - version: what this node speaks; other values are for tests.
    public init(
        role: Role, clusterKey: ClusterKey, ephemeral: EphemeralKeyPair, version: UInt16 = WireProtocol.version
    ) {
        self.role = role
        self.version = version
        self.clusterKey = clusterKey
        self.publicKey = ephemeral.publicKey
        self.ephemeral = ephemeral
        state = role == .initiator ? .ready : .awaitingInit
    }

    /// A fresh random ephemeral key pair, for the shell to pass to `init`.
    public static func ephemeralKeyPair() -> EphemeralKeyPair { EphemeralKeyPair.generate() }

    /// Whether the handshake produced session keys.
    public var isEstablished: Bool {
        if case .established = state { return true }
        return false
    }

    /// Why the handshake failed, once it has.
    public var failure: HandshakeFailure? {
        if case .failed(let failure) = state { return failure }
        return nil
    }

    /// The initiator's first frame. A responder has nothing to send and gets
    /// `[]`; a second call fails.
    public mutating func start() -> [Directive] {
        switch state {
        case .ready:
            state = .awaitingReply
            var writer = ByteWriter(capacity: 38)
            writer.write(raw: Handshake.magic)
            writer.write(uint16: version)
            writer.write(raw: publicKey)
            return [.send(Frame(type: .handshakeInit, body: writer.bytes))]
        case .awaitingInit:
            return []
        case .awaitingReply, .awaitingFinish, .established, .failed:
            return fail(.misuse, "start() called in state \(state)")
        }
    }

    /// Handles one frame from the peer.
    public mutating func receive(_ frame: Frame) -> [Directive] {
        switch (state, frame.type) {
        case (.established, _), (.failed, _):
            // The shell should route frames elsewhere now; say so, change nothing.
            let failure = HandshakeFailure(
                kind: .misuse, reason: "a \(frame.type) frame reached the handshake in state \(state)")
            return [.fail(failure)]
        case (_, .reject):
            return fail(.refusedByPeer, "peer refused: \(HandshakeFailure.peerReason(frame.body))")
        case (.awaitingInit, .handshakeInit):
            return receiveInit(frame.body)
        case (.awaitingReply, .handshakeReply):
            return receiveReply(frame.body)
        case (.awaitingFinish(let expectedProof, let keys), .handshakeFinish):
            return receiveFinish(frame.body, expectedProof: expectedProof, keys: keys)
        case (.ready, _), (.awaitingInit, .handshakeReply), (.awaitingInit, .handshakeFinish), (.awaitingInit, .sealed),
            (.awaitingReply, .handshakeInit), (.awaitingReply, .handshakeFinish), (.awaitingReply, .sealed),
            (.awaitingFinish, .handshakeInit), (.awaitingFinish, .handshakeReply), (.awaitingFinish, .sealed):
            return fail(
                .unexpectedFrame, "unexpected \(frame.type) frame in state \(state)",
                reject: "unexpected \(frame.type) frame during the handshake")
        }
    }

    private mutating func receiveInit(_ body: [UInt8]) -> [Directive] {
        guard body.count >= 6, Array(body.prefix(4)) == Handshake.magic else {
            return fail(
                .malformedFrame, "not a PeerSync handshake: the init does not start with \"PSYN\"",
                reject: "not a PeerSync handshake")
        }
        let peerVersion = UInt16(body[4]) << 8 | UInt16(body[5])
        guard peerVersion == version else {
            return fail(
                .incompatibleVersion,
                "the initiator speaks incompatible protocol version \(peerVersion); this node speaks \(version)",
                reject: "incompatible protocol version \(peerVersion); this node speaks \(version)")
        }
        guard body.count == 38 else { return malformed("init", size: body.count, expected: 38) }
        let peerKey = Array(body[6..<38])
        guard let schedule = schedule(peerPublicKey: peerKey, initiator: peerKey, responder: publicKey) else {
            return invalidPublicKey()
        }
        state = .awaitingFinish(expectedProof: schedule.initiatorProof, keys: schedule.sessionKeys(for: .responder))
        var writer = ByteWriter(capacity: 66)
        writer.write(uint16: version)
        writer.write(raw: publicKey)
        schedule.responderProof.withUnsafeBytes { writer.write(raw: $0) }
        return [.send(Frame(type: .handshakeReply, body: writer.bytes))]
    }

    private mutating func receiveReply(_ body: [UInt8]) -> [Directive] {
        guard body.count >= 2 else { return malformed("reply", size: body.count, expected: 66) }
        let peerVersion = UInt16(body[0]) << 8 | UInt16(body[1])
        guard peerVersion == version else {
            return fail(
                .incompatibleVersion,
                "the responder answered with incompatible protocol version \(peerVersion); "
                    + "this node speaks \(version)",
                reject: "incompatible protocol version \(peerVersion); this node speaks \(version)")
        }
        guard body.count == 66 else { return malformed("reply", size: body.count, expected: 66) }
        let peerKey = Array(body[2..<34])
        guard let schedule = schedule(peerPublicKey: peerKey, initiator: publicKey, responder: peerKey) else {
            return invalidPublicKey()
        }
        guard HandshakeKeySchedule.matches(Array(body[34..<66]), schedule.responderProof) else {
            return fail(
                .clusterKeyMismatch, "cluster key mismatch: the responder does not hold this cluster's key",
                reject: "cluster key mismatch")
        }
        state = .established
        let finish = schedule.initiatorProof.withUnsafeBytes { Array($0) }
        return [
            .send(Frame(type: .handshakeFinish, body: finish)), .established(schedule.sessionKeys(for: .initiator)),
        ]
    }

    private mutating func receiveFinish(
        _ body: [UInt8], expectedProof: SecretBytes, keys: SessionKeys
    ) -> [Directive] {
        guard body.count == 32 else { return malformed("finish", size: body.count, expected: 32) }
        guard HandshakeKeySchedule.matches(body, expectedProof) else {
            return fail(
                .clusterKeyMismatch, "cluster key mismatch: the initiator does not hold this cluster's key",
                reject: "cluster key mismatch")
        }
        state = .established
        return [.established(keys)]
    }

    /// Derives the keys, dropping the ephemeral secret; `nil` for an unusable peer key.
    private mutating func schedule(
        peerPublicKey: [UInt8], initiator: [UInt8], responder: [UInt8]
    ) -> HandshakeKeySchedule? {
        guard let secret = ephemeral?.secretKey else { return nil }
        ephemeral = nil
        return HandshakeKeySchedule(
            clusterKey: clusterKey, ownSecret: secret, peerPublicKey: peerPublicKey, version: version,
            initiatorPublicKey: initiator, responderPublicKey: responder)
    }

    private mutating func malformed(_ name: String, size: Int, expected: Int) -> [Directive] {
        let reason = "malformed handshake \(name): \(size) bytes, expected \(expected)"
        return fail(.malformedFrame, reason, reject: reason)
    }

    private mutating func invalidPublicKey() -> [Directive] {
        fail(
            .invalidPublicKey, "the peer's ephemeral public key is invalid (a low-order point)",
            reject: "invalid ephemeral public key")
    }

    /// Ends the handshake: the reject frame first when there is one, then `.fail`.
    private mutating func fail(_ kind: HandshakeFailure.Kind, _ reason: String, reject: String? = nil) -> [Directive] {
        let failure = HandshakeFailure(kind: kind, reason: reason, rejectReason: reject)
        state = .failed(failure)
        ephemeral = nil
        let rejectFrame = reject.map { [Directive.send(HandshakeFailure.rejectFrame($0))] } ?? []
        return rejectFrame + [.fail(failure)]
    }
}
