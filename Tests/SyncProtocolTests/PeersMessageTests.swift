import PeerNet
import Replica
import Testing

@testable import SyncProtocol

/// The `peers` message carries each replica's role (protocol version 5), so
/// that a replica that learns a relay's address by exchange knows it is a
/// relay before it dials (docs/protocol.md "Messages").
@Suite struct PeersMessageTests {
    let relayAddress = PeerAddress(host: "10.0.0.9", port: 4100)
    let peerAddress = PeerAddress(host: "10.0.0.2", port: 4100)

    /// `peers` of relay `r1` at 10.0.0.9:4100, as docs/protocol.md spells it.
    static let relayVector: [UInt8] =
        [0x06, 0x01, 0x02, 0x72, 0x31, 0x08] + Array("10.0.0.9".utf8) + [0x10, 0x04, 0x02]

    @Test func aRelayAdvertEncodesToTheDocumentedBytes() {
        var encoder = MessageEncoder()
        let advert = PeerAdvert(replicaID: "r1", address: relayAddress, role: .relay)
        #expect(encoder.encode(.peers([advert])) == Self.relayVector)
    }

    @Test func theRoleBytesReadBackAsPeerRelayOrUnknown() throws {
        var decoder = MessageDecoder()
        var bytes = Self.relayVector
        #expect(try decoder.decode(bytes) == .peers([PeerAdvert(replicaID: "r1", address: relayAddress, role: .relay)]))
        bytes[bytes.count - 1] = 1
        #expect(try decoder.decode(bytes) == .peers([PeerAdvert(replicaID: "r1", address: relayAddress, role: .peer)]))
        bytes[bytes.count - 1] = 0
        #expect(try decoder.decode(bytes) == .peers([PeerAdvert(replicaID: "r1", address: relayAddress, role: nil)]))
    }

    @Test func anUnknownRoleIsMalformed() {
        var decoder = MessageDecoder()
        var bytes = Self.relayVector
        bytes[bytes.count - 1] = 3
        #expect(throws: WireError.malformed("peer role 3")) { try decoder.decode(bytes) }
    }

    @Test func anAdvertWithoutItsRoleByteIsTruncated() {
        // The layout of protocol version 4, which version 5 refuses at the handshake anyway.
        var decoder = MessageDecoder()
        #expect(throws: WireError.truncated("peer role")) { try decoder.decode(Array(Self.relayVector.dropLast())) }
    }

    @Test func theProtocolVersionIsFive() {
        #expect(WireProtocol.version == 5)
    }

    /// A replica in the hub (connection 1 is a relay) that hears of another
    /// relay and of a replica by exchange.
    func replicaInTheHub() -> SyncNode {
        var node = SyncNode(
            configuration: .init(hello: Hello(replicaID: "me", listenPort: 4100)), cursor: VectorCursor())
        _ = node.connectionOpened(1, dialed: nil, remoteHost: "10.0.0.1", now: 0)
        _ = node.received(.hello(Hello(replicaID: "relay-0", role: .relay, listenPort: 4100)), on: 1, now: 0)
        let adverts = [
            PeerAdvert(replicaID: "relay-1", address: relayAddress, role: .relay),
            PeerAdvert(replicaID: "b", address: peerAddress, role: .peer),
        ]
        _ = node.received(.peers(adverts), on: 1, now: 0)
        return node
    }

    @Test func aRelayLearnedByExchangeIsKnownAsARelayBeforeItIsDialed() {
        let node = replicaInTheHub()
        #expect(node.manager.topology == .hub)
        #expect(node.manager.targets[relayAddress]?.role == .relay)
        #expect(node.manager.targets[relayAddress]?.source == .exchanged)
        #expect(node.manager.targets[peerAddress]?.role == .peer)
    }

    @Test func inTheHubTheExchangedRelayIsDialedAndTheReplicaIsNot() {
        var node = replicaInTheHub()
        let dials = node.tick(now: 0).compactMap { effect -> PeerAddress? in
            if case .dial(let address) = effect { return address }
            return nil
        }
        #expect(dials == [relayAddress])
    }

    @Test func aNodeTellsItsPeersTheRoleOfANewlyIdentifiedRelay() {
        var node = SyncNode(
            configuration: .init(hello: Hello(replicaID: "me", role: .relay, listenPort: 4100)), cursor: VectorCursor())
        _ = node.connectionOpened(1, dialed: nil, remoteHost: "10.0.0.2", now: 0)
        _ = node.received(.hello(Hello(replicaID: "b", listenPort: 4100)), on: 1, now: 0)
        _ = node.connectionOpened(2, dialed: nil, remoteHost: "10.0.0.9", now: 0)
        let effects = node.received(.hello(Hello(replicaID: "relay-1", role: .relay, listenPort: 4100)), on: 2, now: 0)
        let toB = effects.compactMap { effect -> [PeerAdvert]? in
            if case .send(1, .peers(let adverts)) = effect { return adverts }
            return nil
        }
        let toRelay = effects.compactMap { effect -> [PeerAdvert]? in
            if case .send(2, .peers(let adverts)) = effect { return adverts }
            return nil
        }
        #expect(toB == [[PeerAdvert(replicaID: "relay-1", address: relayAddress, role: .relay)]])
        #expect(toRelay == [[PeerAdvert(replicaID: "b", address: peerAddress, role: .peer)]])
    }
}
