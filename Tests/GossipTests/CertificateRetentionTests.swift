import Foundation
import Gossip
import Replica
import SyncProtocol
import TestSupport
import Testing

/// Which kept certificates a replica prunes (docs/identity.md, "Pruned
/// certificates"): revoked or expired more than 30 days ago by its clock,
/// and not needed to verify a feed it holds.
@Suite("CertificateRetention: certificates of revoked or long-expired replicas are pruned")
struct CertificateRetentionTests {
    static let day: Int64 = 86_400_000
    let admin = SigningKey.generate()
    let clock = ManualClock()

    func certificate(
        _ replicaID: String, key: SigningKey, write: [String] = ["team"], expiresInDays days: Int64?
    ) -> Certificate {
        Certificate.issue(
            by: admin, for: key.publicKey, replicaID: replicaID, read: ["team"], write: write,
            issuedMs: UInt64(clock.now - 400 * Self.day),
            expiresMs: days.map { UInt64(clock.now + $0 * Self.day) })
    }

    func retention(revoked: Set<String> = []) -> CertificateRetention {
        CertificateRetention(ownReplicaID: "me", revoked: revoked, nowMs: UInt64(clock.now))
    }

    @Test("expired, but not 30 days ago: kept; 30 days on by the clock: pruned")
    func longExpiredIsThirtyDaysPastExpiry() {
        let expired = certificate("b", key: .generate(), expiresInDays: -29)
        #expect(retention().prunable([expired], feedOrigins: []).isEmpty)
        clock.advance(by: Self.day - 1)
        #expect(retention().prunable([expired], feedOrigins: []).isEmpty)
        clock.advance(by: 1)
        #expect(retention().prunable([expired], feedOrigins: []) == [expired])
    }

    @Test("a revoked replica's certificate is pruned at once, one that never expires is kept")
    func revokedAndNeverExpiring() {
        let revoked = certificate("b", key: .generate(), expiresInDays: 300)
        let forever = certificate("c", key: .generate(), expiresInDays: nil)
        let own = certificate("me", key: .generate(), expiresInDays: -100)
        clock.advance(by: 10_000 * Self.day)
        #expect(retention(revoked: ["b", "me"]).prunable([revoked, forever, own], feedOrigins: []) == [revoked])
    }

    @Test("a lapsed certificate stays while the log holds its replica's feeds and nothing current covers it")
    func neededCertificatesStay() {
        let key = SigningKey.generate()
        let old = certificate("b", key: key, write: ["team", "b"], expiresInDays: -60)
        let renewedNarrower = certificate("b", key: key, write: ["team"], expiresInDays: 300)
        let renewedOtherKey = certificate("b", key: .generate(), write: ["team", "b"], expiresInDays: 300)
        #expect(retention().prunable([old], feedOrigins: ["b"]).isEmpty, "the only key of b's feeds")
        #expect(retention().prunable([old, renewedNarrower, renewedOtherKey], feedOrigins: ["b"]).isEmpty)
        #expect(retention(revoked: ["b"]).prunable([old], feedOrigins: ["b"]).isEmpty, "b's history stays verifiable")
        let renewed = certificate("b", key: key, write: ["team", "b", "c"], expiresInDays: 300)
        #expect(retention().prunable([old, renewed], feedOrigins: ["b"]) == [old], "superseded by a renewal")
    }

    @Test("the storage executor removes what the retention prunes, and a reopened log no longer has it")
    func storagePrunesTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("a.db")
        let log = try EventLog.create(at: path, replicaID: "me")
        let gone = certificate("b", key: .generate(), expiresInDays: -31)
        let held = certificate("c", key: .generate(), expiresInDays: -31)
        let current = certificate("d", key: .generate(), expiresInDays: 10)
        try log.storeCertificates([gone, held, current].map { ($0.replicaID, $0.bytes) })
        _ = try log.ingest([
            Event(
                eventID: UUID(), feed: FeedID(replicaID: "c"), seq: 1, timeMs: 1_000, entityType: "item",
                entityID: "i1", payload: #"{"type":"Created","name":"Bolts","quantity":1}"#)
        ])
        let storage = try StorageExecutor(path: path)
        #expect(try storage.pruneCertificates(retention()) == [gone])
        #expect(try storage.pruneCertificates(retention()).isEmpty, "nothing more to prune")
        storage.close()
        let kept = try EventLog.open(at: path).certificates().map { try Certificate(bytes: $0) }
        #expect(Set(kept) == [held, current])
    }
}
