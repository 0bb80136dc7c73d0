import Foundation
import Gossip
import Replica
import SyncProtocol
import Testing

@Suite struct SyncNodeMetricsTests {
    @Test func eventsStoredFromAPeerAreCountedWithTheirLatency() throws {
        let mesh = try NodeMesh(["a", "b"])
        try mesh.append(3, on: "a")
        mesh["b"].wallClock.advance(by: 200)
        mesh.connect("a", "b")
        let metrics = mesh["b"].node.metrics()
        #expect(metrics.eventsIngested == 3 && metrics.duplicatesIgnored == 0 && metrics.eventsRejected == 0)
        #expect(metrics.syncLatency.count == 3)
        #expect((0.59...0.61).contains(metrics.syncLatency.sum), "about 200 ms each")
        #expect(metrics.syncLatency.buckets.first { $0.upperBound == 0.1 }?.count == 0)
        #expect(metrics.syncLatency.buckets.first { $0.upperBound == 0.25 }?.count == 3)
        #expect(metrics.peersConnected == 1 && metrics.connectionsOpen == 1 && metrics.syncLagEvents == 0)
        #expect(mesh["a"].node.metrics().eventsIngested == 0)
    }

    @Test func anEventFromTheFutureCountsAsNoLatency() throws {
        let mesh = try NodeMesh(["a", "b"])
        mesh["a"].wallClock.advance(by: 5_000)
        try mesh.append(1, on: "a")
        mesh.connect("a", "b")
        let latency = mesh["b"].node.metrics().syncLatency
        #expect(latency.count == 1 && latency.sum == 0)
    }

    @Test func theSameEventsFromTwoPeersCountAsDuplicates() throws {
        let mesh = try NodeMesh(["a", "b", "c"])
        try mesh.append(2, on: "a")
        try mesh.ingest(try mesh["a"].log.events(after: 0, limit: 10).map(\.event), on: "c")
        // b meets a and c at once: both see its empty cursor and send.
        mesh.connect([("b", "a"), ("b", "c")])
        let metrics = mesh["b"].node.metrics()
        #expect(metrics.eventsIngested == 2 && metrics.duplicatesIgnored == 2)
        #expect(metrics.peersConnected == 2)
    }

    @Test func aForkIsCountedOnceAsDetectedAndAsARejectedEvent() throws {
        let mesh = try NodeMesh(["a", "b", "c"])
        try mesh.append(1, on: "a")
        let real = try #require(try mesh["a"].log.events(after: 0, limit: 1).first?.event)
        var forged = real
        forged.eventID = UUID()
        try mesh.ingest([forged], on: "c")
        mesh.connect([("b", "a"), ("b", "c")])
        let metrics = mesh["b"].node.metrics()
        #expect(metrics.eventsIngested == 1)
        #expect(metrics.forksDetected == 1 && metrics.eventsRejectedFork == 1)
        #expect(metrics.eventsRejected == metrics.eventsRejectedFork)
    }
}
