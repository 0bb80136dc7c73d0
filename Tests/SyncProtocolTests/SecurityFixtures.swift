@testable import SyncProtocol

/// Two handshake machines wired back to back in memory: every `.send` of one
/// is delivered to the other until neither has anything left to say.
struct HandshakeExchange {
    var initiator: Handshake
    var responder: Handshake
    /// Every frame in the order it was sent, with the side that sent it.
    var wire: [(from: Handshake.Role, frame: Frame)] = []
    var initiatorKeys: SessionKeys?
    var responderKeys: SessionKeys?
    var initiatorFailure: HandshakeFailure?
    var responderFailure: HandshakeFailure?

    init(
        initiatorKey: ClusterKey, responderKey: ClusterKey,
        initiatorVersion: UInt16 = WireProtocol.version, responderVersion: UInt16 = WireProtocol.version,
        initiatorEphemeral: EphemeralKeyPair = Handshake.ephemeralKeyPair(),
        responderEphemeral: EphemeralKeyPair = Handshake.ephemeralKeyPair()
    ) {
        initiator = Handshake(
            role: .initiator, clusterKey: initiatorKey, ephemeral: initiatorEphemeral, version: initiatorVersion)
        responder = Handshake(
            role: .responder, clusterKey: responderKey, ephemeral: responderEphemeral, version: responderVersion)
    }

    /// Runs the whole exchange.
    mutating func run() {
        var inFlight: [(to: Handshake.Role, frame: Frame)] = []
        inFlight += handle(initiator.start(), from: .initiator)
        inFlight += handle(responder.start(), from: .responder)
        while !inFlight.isEmpty {
            let (to, frame) = inFlight.removeFirst()
            let directives = to == .initiator ? initiator.receive(frame) : responder.receive(frame)
            inFlight += handle(directives, from: to)
        }
    }

    private mutating func handle(
        _ directives: [Handshake.Directive], from side: Handshake.Role
    ) -> [(to: Handshake.Role, frame: Frame)] {
        var outgoing: [(to: Handshake.Role, frame: Frame)] = []
        for directive in directives {
            switch directive {
            case .send(let frame):
                wire.append((side, frame))
                outgoing.append((side == .initiator ? .responder : .initiator, frame))
            case .established(let keys):
                if side == .initiator { initiatorKeys = keys } else { responderKeys = keys }
            case .fail(let failure):
                if side == .initiator { initiatorFailure = failure } else { responderFailure = failure }
            }
        }
        return outgoing
    }
}

/// A fixed key, so that tests which depend on its bytes are deterministic.
let fixedClusterKey = try! ClusterKey(bytes: (0..<32).map { UInt8($0) })

/// The frame a fresh initiator opens with.
func handshakeInitFrame(key: ClusterKey = fixedClusterKey, version: UInt16 = WireProtocol.version) -> Frame {
    var initiator = Handshake(
        role: .initiator, clusterKey: key, ephemeral: Handshake.ephemeralKeyPair(), version: version)
    guard case .send(let frame) = initiator.start().first else { fatalError("an initiator starts with a frame") }
    return frame
}

extension Array where Element == Handshake.Directive {
    /// The failure that ends these directives, if they end in one.
    var failure: HandshakeFailure? {
        guard case .fail(let failure) = last else { return nil }
        return failure
    }

    /// The reason in the reject frame these directives send, if any.
    var rejectReason: String? {
        for case .send(let frame) in self where frame.type == .reject {
            return String(decoding: frame.body, as: UTF8.self)
        }
        return nil
    }

    var establishes: Bool {
        contains { if case .established = $0 { true } else { false } }
    }
}
