import Foundation
import Gossip
import Replica
import SyncProtocol

/// Anti-entropy traffic of the converged mesh: the wire bytes (framing and
/// encryption included) each node sends each peer per round when nothing
/// changed, then the round that follows one changed feed.
struct SyncIdleBenchmark {
    /// Rounds every connection must send while measured.
    let rounds: Int
    let mesh: SyncMesh
    /// Moves skipped per connection before counting.
    static let warmUpRounds = 3
    /// Single-append trials for the changed-feed round.
    static let changeTrials = 5

    func run() throws -> IdleResult {
        // A's feed is named on every connection first, so that no counted
        // round carries a feed's first declaration.
        _ = try mesh.services[0].append(NewEvent(item: "idle-warm-up", .created(name: "warm-up", quantity: 1)))
        try mesh.waitUntilConverged()
        progress("idle: \(rounds) anti-entropy rounds per connection, \(mesh.antiEntropyIntervalMs) ms apart ...")
        var result = IdleResult(intervalMs: Int(mesh.antiEntropyIntervalMs))
        result.computed = IdleResult.Computed(feed: FeedID(replicaID: "bench-a"), head: 123_456)

        var moves: [LinkKey: [Int]] = [:]
        var last = snapshot()
        let start = ContinuousClock.now
        try waitUntil("\(rounds) idle rounds on every connection", seconds: Double(rounds) * 2 + 20, pollMs: 1) {
            let now = snapshot()
            for (key, sent) in now {
                if let before = last[key], sent != before { moves[key, default: []].append(sent - before) }
            }
            last = now
            return !now.isEmpty
                && now.keys.allSatisfy { (moves[$0]?.count ?? 0) >= SyncIdleBenchmark.warmUpRounds + rounds }
        }
        result.idleSeconds = (ContinuousClock.now - start).seconds
        for (key, deltas) in moves.sorted(by: { $0.key < $1.key }) {
            let counted = Array(deltas.dropFirst(SyncIdleBenchmark.warmUpRounds))
            result.links.append(
                IdleResult.Link(
                    from: key.from, to: key.to, rounds: counted.count, bytes: counted.reduce(0, +),
                    smallest: counted.min() ?? 0, largest: counted.max() ?? 0))
        }
        try measureChangedRound(&result)
        return result
    }

    /// One append on A per trial; after its pushes and acks settle, each
    /// connection's next move is its node's next round, which names the
    /// changed feed (A's own on A; A's, as ingested, on B and C).
    private func measureChangedRound(_ result: inout IdleResult) throws {
        progress("idle: \(SyncIdleBenchmark.changeTrials) single appends on A, then the next round of each node ...")
        var workload = ItemWorkload(
            eventCount: SyncIdleBenchmark.changeTrials, maxItems: 20_000, distribution: .recentHot,
            seed: ItemWorkload.seed ^ 0x1D1E)
        var changed: [LinkKey: Int] = [:]
        var summaries: [LinkKey: Int] = [:]
        while let change = workload.next() {
            let before = snapshot()
            let stored = try mesh.services[0].append(NewEvent(item: "idle-\(change.entityID)", change.event))
            _ = try mesh.arrivals.waitForAll(stored.event.eventID, seconds: 10)
            // Settled: no counter moved for 15 ms.
            var last = snapshot()
            var quietSince = ContinuousClock.now
            try waitUntil("the push to settle", seconds: 5, pollMs: 1) {
                let now = snapshot()
                if now != last {
                    last = now
                    quietSince = ContinuousClock.now
                }
                return ContinuousClock.now - quietSince >= .milliseconds(15)
            }
            result.pushBytesPerEvent.append(last.keys.reduce(0) { $0 + last[$1]! - (before[$1] ?? 0) })
            var next: [LinkKey: Int] = [:]
            try waitUntil("the round after a change", seconds: 5, pollMs: 1) {
                for (key, sent) in snapshot() where next[key] == nil && sent != last[key] {
                    next[key] = sent - (last[key] ?? 0)
                }
                return next.count >= last.count
            }
            for (key, bytes) in next {
                if bytes >= result.computed.emptyRoundFrame + result.computed.stateFrame {
                    summaries[key] = max(summaries[key] ?? 0, bytes)
                } else {
                    changed[key] = max(changed[key] ?? 0, bytes)
                }
            }
        }
        result.changedRounds = changed.sorted { $0.key < $1.key }.map { ($0.key.from, $0.key.to, $0.value) }
        result.summaryRounds = summaries.sorted { $0.key < $1.key }.map { ($0.key.from, $0.key.to, $0.value) }
    }

    /// `bytesSent` of every identified connection of every node.
    private func snapshot() -> [LinkKey: Int] {
        var sent: [LinkKey: Int] = [:]
        for (index, service) in mesh.services.enumerated() {
            for connection in service.connectionSnapshots() {
                guard let peer = connection.peer?.replicaID else { continue }
                sent[
                    LinkKey(from: mesh.names[index], to: peer.replacingOccurrences(of: "bench-", with: "").uppercased())
                ] =
                    connection.bytesSent
            }
        }
        return sent
    }
}

/// One direction of one connection, e.g. A → B.
struct LinkKey: Hashable, Comparable {
    var from: String
    var to: String

    static func < (lhs: LinkKey, rhs: LinkKey) -> Bool { (lhs.from, lhs.to) < (rhs.from, rhs.to) }
}

/// What the idle measurement found.
struct IdleResult {
    /// Bytes one direction of one connection carried in its counted rounds.
    struct Link {
        var from: String
        var to: String
        var rounds: Int
        var bytes: Int
        var smallest: Int
        var largest: Int

        var bytesPerRound: Double { rounds > 0 ? Double(bytes) / Double(rounds) : .nan }
    }

    /// The cursor messages' sizes from `MessageEncoder`, sealed.
    struct Computed {
        /// An idle round: an empty cursor message in a sealed frame.
        var emptyRoundFrame = 0
        /// What one changed feed adds to a round (its index and head as varints), once declared.
        var perChangedFeed = 0
        /// What naming a feed for the first time on a connection adds once (its replica id and scope).
        var firstDeclaration = 0
        /// The smallest sealed `state` message (event count and state hash), sent once the log is quiet after a change.
        var stateFrame = 0

        init() {}

        init(feed: FeedID, head: UInt64) {
            var encoder = MessageEncoder()
            let declared = encoder.encode(.cursor([feed: head])).count
            let empty = encoder.encode(.cursor(VectorCursor())).count
            let one = encoder.encode(.cursor([feed: head])).count
            emptyRoundFrame = empty + CatchUpResult.sealedFrameOverhead
            perChangedFeed = one - empty
            firstDeclaration = declared - one
            let summary = StateSummary(eventCount: 0, hash: StateHash(bytes: Array(repeating: 0, count: 32))!)
            stateFrame = encoder.encode(.state(summary)).count + CatchUpResult.sealedFrameOverhead
        }
    }

    var intervalMs: Int
    var idleSeconds = 0.0
    var links: [Link] = []
    var computed = Computed()
    /// Per trial: bytes all connections sent from the append until the push settled.
    var pushBytesPerEvent: [Int] = []
    /// The largest next round after a change, per direction.
    var changedRounds: [(from: String, to: String, bytes: Int)] = []
    /// The largest next round that was the first quiet one, with the state summary, per direction.
    var summaryRounds: [(from: String, to: String, bytes: Int)] = []

    init(intervalMs: Int) { self.intervalMs = intervalMs }

    /// Bytes per round per peer, over every direction.
    var meanBytesPerRound: Double {
        let rounds = links.reduce(0) { $0 + $1.rounds }
        return rounds > 0 ? Double(links.reduce(0) { $0 + $1.bytes }) / Double(rounds) : .nan
    }

    /// The largest idle round any direction sent.
    var largestRound: Int { links.map(\.largest).max() ?? 0 }
}
