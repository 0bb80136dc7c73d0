import Foundation
import Replica
import Synchronization
import Testing

@testable import SyncProtocol

/// Revocations: their bytes, and what a node does with them (docs/identity.md, "Revocation").
@Suite struct RevocationTests {
    static let revokedMs: UInt64 = 1_797_000_000_000

    @Test func aRevocationReadsBackAndAnAlteredOneIsRefused() throws {
        let revocation = Revocation.issue(by: IdentityTests.admin, replicaID: "carol", revokedMs: Self.revokedMs)
        #expect(try Revocation(bytes: revocation.bytes) == revocation)
        #expect(try Revocation(code: revocation.code) == revocation)
        #expect(revocation.code.hasPrefix("psr1-"))
        var altered = revocation.bytes
        altered[40] ^= 1  // inside the replica id
        #expect(throws: IdentityError.self) { try Revocation(bytes: altered) }
        #expect(throws: IdentityError.self) { try Revocation(bytes: Array(revocation.bytes.dropLast())) }
    }

    @Test func theRevocationsMessageCarriesThemAndRefusesAnAlteredOne() throws {
        let revocations = ["carol", "dave"].map {
            Revocation.issue(by: IdentityTests.admin, replicaID: $0, revokedMs: Self.revokedMs)
        }
        var encoder = MessageEncoder()
        var bytes = encoder.encode(.revocations(revocations))
        #expect(bytes.first == 11)
        var decoder = MessageDecoder()
        #expect(try decoder.decode(bytes) == .revocations(revocations))
        bytes[bytes.count - 1] ^= 1  // the last signature
        #expect(throws: WireError.self) { try decoder.decode(bytes) }
    }

    @Test func aRevokedReplicaIsRefusedWhateverItShows() {
        var trust = IdentityTests.trust()
        let revocation = Revocation.issue(by: IdentityTests.admin, replicaID: "alice-tablet", revokedMs: Self.revokedMs)
        trust.revoked = ["alice-tablet": revocation]
        let binding = [UInt8](repeating: 4, count: 32)
        let identity = PeerIdentity.proving(
            IdentityTests.replica, certificate: IdentityTests.vector(), binding: binding, role: .initiator)
        #expect(throws: IdentityError.revoked(replicaID: "alice-tablet", revokedMs: Self.revokedMs)) {
            try trust.admit(identity, replicaID: "alice-tablet", binding: binding, role: .initiator)
        }
    }

    /// A node of a certified cluster with one admitted peer, alice-tablet, on connection 1.
    static func node(
        revoking revoked: [String] = [], certificates: [Certificate] = [],
        logger: @escaping @Sendable (LogRecord) -> Void = { _ in }
    ) -> SyncNode {
        var configuration = SyncNode.Configuration(hello: Hello(replicaID: "me", listenPort: 1))
        configuration.session.trust = IdentityTests.trust()
        configuration.certificates = certificates
        configuration.revocations = revoked.map {
            Revocation.issue(by: IdentityTests.admin, replicaID: $0, revokedMs: Self.revokedMs)
        }
        var node = SyncNode(configuration: configuration, cursor: VectorCursor(), logger: logger)
        let binding = [UInt8](repeating: 4, count: 32)
        _ = node.connectionOpened(1, dialed: nil, transcript: binding, now: 0)
        let hello = Hello(
            replicaID: "alice-tablet", listenPort: 2,
            identity: PeerIdentity.proving(
                IdentityTests.replica, certificate: IdentityTests.vector(), binding: binding, role: .initiator))
        _ = node.received(.hello(hello), on: 1, now: 0)
        _ = node.received(.cursor([:]), on: 1, now: 0)
        return node
    }

    @Test func eventsARevokedReplicaWroteFromItsRevocationOnAreNotStoredWhoeverForwardsThem() {
        var node = Self.node(revoking: ["carol"])
        let own = SessionFixtures.events(FeedID(replicaID: "alice-tablet", scope: "alice"), 1...2)
        // carol's seqs 1-2 were written before the revocation, 3-5 at or after it.
        let carols = SessionFixtures.events(FeedID(replicaID: "carol", scope: "team"), 1...5).map { event in
            var event = event
            event.timeMs = Int64(Self.revokedMs) + Int64(event.seq) - 3
            return event
        }
        let effects = node.received(.events(EventBatch(batchID: 1, events: own + carols)), on: 1, now: 0)
        #expect(
            effects.contains(.store(1, [EventBatch(batchID: 1, events: own + carols.prefix(2))], keys: nil)),
            "\(effects)")
        #expect(node.metrics().eventsRejectedRevoked == 3)
    }

    @Test func aLearnedRevocationEndsTheRevokedSessionAndIsStoredAndPassedOn() {
        var node = Self.node()
        let carol = Revocation.issue(by: IdentityTests.admin, replicaID: "carol", revokedMs: Self.revokedMs)
        // From nowhere (installed here): the peer hears of it, the shell stores it.
        #expect(node.learn([carol], from: nil, now: 0) == [.revoked([carol]), .send(1, .revocations([carol]))])
        #expect(node.learn([carol], from: nil, now: 0).isEmpty)
        let stranger = try! SigningKey(seed: [UInt8](repeating: 7, count: 32))
        let foreign = Revocation.issue(by: stranger, replicaID: "alice-tablet", revokedMs: Self.revokedMs)
        #expect(node.learn([foreign], from: 1, now: 0).isEmpty)
        // The connected peer itself: it is handed its revocation, and its session ends with the reason.
        let alice = Revocation.issue(by: IdentityTests.admin, replicaID: "alice-tablet", revokedMs: Self.revokedMs)
        let reason =
            "refused: " + IdentityError.revoked(replicaID: "alice-tablet", revokedMs: Self.revokedMs).description
        #expect(
            node.learn([alice], from: nil, now: 0)
                == [
                    .revoked([alice]), .send(1, .revocations([alice])), .send(1, .goodbye(reason: reason)),
                    .close(1, reason: reason),
                ])
        #expect(node.revocations == [alice, carol])
    }

    @Test func aReplicaHandedItsOwnRevocationKeepsItAndLogsWhyItIsRefused() {
        let records = Mutex<[LogRecord]>([])
        var node = Self.node { record in records.withLock { $0.append(record) } }
        let own = Revocation.issue(by: IdentityTests.admin, replicaID: "me", revokedMs: Self.revokedMs)
        let effects = node.learn([own], from: 1, now: 0)
        #expect(effects.first == .revoked([own]), "stored like any other: its status lists it")
        #expect(node.revocations == [own])
        let logged = records.withLock { $0 }.first { $0.event == .thisReplicaRevoked }
        #expect(logged?.level == .error && logged?["replica"] == "me")
    }

    /// A wall clock a test moves.
    final class WallClock: Sendable {
        private let ms: Mutex<UInt64>
        init(_ ms: UInt64) { self.ms = Mutex(ms) }
        var now: UInt64 { ms.withLock { $0 } }
        func set(_ value: UInt64) { ms.withLock { $0 = value } }
    }

    @Test func aSessionEndsWhenThePeersCertificateExpiresWhileItRuns() {
        let clock = WallClock(IdentityTests.issuedMs)
        var configuration = SyncNode.Configuration(hello: Hello(replicaID: "me", listenPort: 1))
        configuration.session.trust = TrustPolicy(adminKey: IdentityTests.admin.publicKey, wallClockMs: { clock.now })
        var node = SyncNode(configuration: configuration, cursor: VectorCursor())
        let binding = [UInt8](repeating: 4, count: 32)
        _ = node.connectionOpened(1, dialed: nil, transcript: binding, now: 0)
        let identity = PeerIdentity.proving(
            IdentityTests.replica, certificate: IdentityTests.vector(), binding: binding, role: .initiator)
        _ = node.received(.hello(Hello(replicaID: "alice-tablet", listenPort: 2, identity: identity)), on: 1, now: 0)
        _ = node.received(.cursor([:]), on: 1, now: 0)
        #expect(!node.tick(now: 1_000).contains { if case .close = $0 { true } else { false } })
        clock.set(IdentityTests.expiresMs)
        let reason =
            "refused: "
            + IdentityError.certificateExpired(replicaID: "alice-tablet", expiresMs: IdentityTests.expiresMs)
            .description
        let effects = node.tick(now: 2_000)
        #expect(effects.contains(.send(1, .goodbye(reason: reason))) && effects.contains(.close(1, reason: reason)))
    }

    @Test func anOpenClusterIgnoresRevocations() {
        var node = SyncNode(
            configuration: SyncNode.Configuration(hello: Hello(replicaID: "me", listenPort: 1)), cursor: VectorCursor())
        let carol = Revocation.issue(by: IdentityTests.admin, replicaID: "carol", revokedMs: Self.revokedMs)
        #expect(node.learn([carol], from: nil, now: 0).isEmpty && node.revocations.isEmpty)
    }
}
