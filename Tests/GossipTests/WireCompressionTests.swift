import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import TestSupport
import Testing

/// Two `GossipService`s over loopback TCP: batches go compressed only when
/// both offer it (`Configuration.wireCompression`), and a side without it
/// syncs plain, as a build from before compression does.
@Suite("wire compression between two services")
struct WireCompressionTests {
    static let events = 3_000

    /// A's bytes sent while B, fresh, catches up on `events` events from A.
    func catchUp(a compressionA: Bool, b compressionB: Bool) throws -> Int {
        let temp = try TemporaryDirectory()
        let pathA = temp.path("a.db")
        let pathB = temp.path("b.db")
        let logA = try EventLog.create(at: pathA, replicaID: "replica-a")
        _ = try EventLog.create(at: pathB, replicaID: "replica-b")
        var batch: [NewEvent] = []
        for index in 0..<WireCompressionTests.events {
            let item = "i\(index / 4)"
            batch.append(
                index % 4 == 0
                    ? NewEvent(
                        item: item, .created(name: "Zinc-plated hex bolt ISO \(4000 + index) M8x40", quantity: 5))
                    : NewEvent(item: item, .quantityChanged(quantity: Int64(index % 997))))
        }
        _ = try logA.append(batch)
        let key = ClusterKey.generate()
        func service(_ path: String, compression: Bool, peers: [PeerAddress]) throws -> GossipService {
            let storage = try StorageExecutor(path: path)
            var configuration = GossipService.Configuration(replicaID: storage.replicaID)
            configuration.listenHost = "127.0.0.1"
            configuration.listenPort = 0
            configuration.peers = peers
            configuration.wireCompression = compression
            return try GossipService(storage: storage, clusterKey: key, configuration: configuration, logger: { _ in })
        }
        let a = try service(pathA, compression: compressionA, peers: [])
        let port = try a.start()
        defer { a.stop(reason: "test over") }
        let b = try service(pathB, compression: compressionB, peers: [PeerAddress(host: "127.0.0.1", port: port)])
        // Woken by B's commits, before B starts, so that no commit is missed.
        let target = a.storage.cursor()
        let storageB = b.storage
        let holdsAll = DispatchSemaphore(value: 0)
        storageB.observe { change in if change.cursor == target { holdsAll.signal() } }
        _ = try b.start()
        defer { b.stop(reason: "test over") }
        let caughtUp = holdsAll.wait(timeout: .now() + 60) == .success
        try #require(caughtUp, "B did not catch up (a \(compressionA), b \(compressionB))")
        return a.metrics().bytesSent
    }

    @Test("both offer it: compressed; either does not: plain, and it still syncs")
    func negotiation() throws {
        let compressed = try catchUp(a: true, b: true)
        let plainByA = try catchUp(a: false, b: true)
        let plainByB = try catchUp(a: true, b: false)
        let perEvent = { (bytes: Int) in Double(bytes) / Double(WireCompressionTests.events) }
        // Plain, each event costs its 16-byte id and ~40 bytes of payload at least.
        #expect(perEvent(plainByA) > 55, "plain when A does not offer it: \(perEvent(plainByA)) bytes/event")
        #expect(perEvent(plainByB) > 55, "plain when B does not offer it: \(perEvent(plainByB)) bytes/event")
        #expect(
            Double(compressed) < 0.7 * Double(min(plainByA, plainByB)),
            "compressed \(perEvent(compressed)) bytes/event against plain \(perEvent(plainByA))")
    }
}
