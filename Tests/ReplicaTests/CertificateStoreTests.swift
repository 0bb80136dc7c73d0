import Foundation
import TestSupport
import Testing

@testable import Replica

/// The certificates a log keeps, and the origins whose keys its feeds need
/// (docs/identity.md, "Pruned certificates").
@Suite("EventLog: kept certificates and feed origins")
struct CertificateStoreTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test("feed origins are the replicas whose keys sign the feeds held, a thin client's feed its relay's")
    func feedOriginsNameTheSigners() throws {
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a")
        _ = try log.ingest([
            Fixtures.itemEvent("b", seq: 1, time: 1_000, item: "i1", .created(name: "Bolts", quantity: 1)),
            Fixtures.itemEvent("tablet@relay", seq: 1, time: 1_001, item: "i2", .created(name: "Nuts", quantity: 2)),
        ])
        #expect(try log.feedOrigins() == ["b", "relay"])
    }

    @Test("removing certificates removes just those, and they stay removed after a reopen")
    func removedCertificatesStayRemoved() throws {
        let path = directory.path("a.db")
        let log = try EventLog.create(at: path, replicaID: "a")
        try log.storeCertificates([("b", [1, 2, 3]), ("b", [4, 5]), ("c", [6])])
        #expect(try log.removeCertificates([[1, 2, 3], [6], [9, 9]]) == 2)
        #expect(try log.certificates() == [[4, 5]])
        #expect(try EventLog.open(at: path).certificates() == [[4, 5]])
        #expect(try log.removeCertificates([]) == 0)
    }
}
