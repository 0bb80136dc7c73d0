import Foundation
import Gossip
import Replica
import SyncProtocol

/// The catch-up of the daemons, replayed in this process on one thread with
/// no sockets: A's log behind a `SyncNode`, a fresh log behind another, and
/// between them every message encoded, sealed, framed, cut out of the byte
/// stream, opened and decoded, as `PeerConnection` does.
struct SyncPipelineAnalysis {
    /// A's database (read only).
    let sourcePath: String
    /// The events A holds.
    let events: Int
    let clusterKey: ClusterKey
    let workspace: Workspace

    func run() throws -> PipelineResult {
        progress("catch-up analysis: the same session in this process, stage by stage ...")
        let targetPath = workspace.freshDatabase("sync-pipeline-target.db")
        defer { workspace.remove(targetPath) }
        let sourceLog = try EventLog.open(at: sourcePath)
        let targetLog = try EventLog.create(at: targetPath, replicaID: "bench-pipeline")
        var source = SyncNode(
            configuration: .init(hello: Hello(replicaID: sourceLog.replicaID, listenPort: 4100)),
            cursor: try sourceLog.cursor())
        var target = SyncNode(
            configuration: .init(hello: Hello(replicaID: targetLog.replicaID, listenPort: 4101)),
            cursor: try targetLog.cursor())
        var (toTarget, toSource) = try SyncPipelineAnalysis.channels(clusterKey)
        var result = PipelineResult()

        /// A node's effects with its storage work done at once on its log, as the stage's cost.
        func step(_ node: inout SyncNode, _ log: EventLog, _ input: (inout SyncNode) -> [SyncNode.Effect])
            -> [Message]
        {
            let effects = input(&node)
            return SyncPipelineAnalysis.sends(DirectStorage.carryOut(effects, node: &node, log: log, now: 0))
        }
        var fromSource = result.sourceNode.measure {
            step(&source, sourceLog) { $0.connectionOpened(1, dialed: nil, now: 0) }
        }
        var fromTarget = result.targetNode.measure {
            step(&target, targetLog) { $0.connectionOpened(1, dialed: nil, now: 0) }
        }
        while !fromSource.isEmpty || !fromTarget.isEmpty {
            if !fromSource.isEmpty {
                // As `ConnectionCodec`: each encoder learns what the other direction's decoder saw.
                toTarget.encoder.peerAcceptsCompression = toSource.decoder.peerOffersCompression
                let message = try toTarget.carry(fromSource.removeFirst(), into: &result)
                if case .events = message { result.batches += 1 }
                fromTarget += result.targetNode.measure {
                    step(&target, targetLog) { $0.received(message, on: 1, now: 0) }
                }
            }
            if !fromTarget.isEmpty {
                toSource.encoder.peerAcceptsCompression = toTarget.decoder.peerOffersCompression
                let message = try toSource.carry(fromTarget.removeFirst(), into: &result)
                fromSource += result.sourceNode.measure {
                    step(&source, sourceLog) { $0.received(message, on: 1, now: 0) }
                }
            }
        }
        result.bytesToTarget = toTarget.wireBytes
        result.bytesToSource = toSource.wireBytes
        result.framesToTarget = toTarget.frames
        result.eventsStored = target.statistics.eventsStored
        guard result.eventsStored == events else {
            throw BenchmarkFailure(
                description: "the in-process session stored \(result.eventsStored) of \(events) events")
        }
        return result
    }

    /// The messages among a node's effects (this pipeline has one connection, id 1).
    private static func sends(_ effects: [SyncNode.Effect]) -> [Message] {
        effects.compactMap { effect in
            if case .send(_, let message) = effect { return message }
            return nil
        }
    }

    /// The two directions of one connection, keyed by an in-memory handshake
    /// (the target dialed, as B dials A).
    private static func channels(_ key: ClusterKey) throws -> (PipelineChannel, PipelineChannel) {
        var initiator = Handshake(role: .initiator, clusterKey: key, ephemeral: Handshake.ephemeralKeyPair())
        var responder = Handshake(role: .responder, clusterKey: key, ephemeral: Handshake.ephemeralKeyPair())
        // init →, ← reply, finish → (the initiator has its keys with the reply, the responder with the finish).
        var reply: [Handshake.Directive] = []
        for case .send(let frame) in initiator.start() { reply += responder.receive(frame) }
        var finish: [Handshake.Directive] = []
        for case .send(let frame) in reply { finish += initiator.receive(frame) }
        var done: [Handshake.Directive] = []
        for case .send(let frame) in finish { done += responder.receive(frame) }
        var initiatorKeys: SessionKeys?
        var responderKeys: SessionKeys?
        for case .established(let keys) in finish { initiatorKeys = keys }
        for case .established(let keys) in done { responderKeys = keys }
        guard let initiatorKeys, let responderKeys else {
            throw BenchmarkFailure(description: "the in-memory handshake did not agree on keys")
        }
        return (
            PipelineChannel(sealer: responderKeys.sealer, opener: initiatorKeys.opener),
            PipelineChannel(sealer: initiatorKeys.sealer, opener: responderKeys.opener)
        )
    }
}

/// One direction of the in-memory connection: the sender's encoder and
/// sealer, the receiver's frame cutter, opener and decoder.
struct PipelineChannel {
    let sealer: FrameSealer
    let opener: FrameOpener
    /// Both daemons offer compressed batches, as `peerd run` does.
    var encoder = MessageEncoder(compression: true)
    var frameDecoder = FrameDecoder()
    var decoder = MessageDecoder(compression: true)
    var wireBytes = 0
    var frames = 0

    init(sealer: FrameSealer, opener: FrameOpener) {
        self.sealer = sealer
        self.opener = opener
    }

    /// Sends `message` through every stage and returns it as the receiver decodes it.
    mutating func carry(_ message: Message, into result: inout PipelineResult) throws -> Message {
        let plaintext = result.encode.measure { encoder.encode(message) }
        let bytes = result.seal.measure { sealer.seal(plaintext).encoded() }
        wireBytes += bytes.count
        frames += 1
        let frame = try result.open.measure { () throws -> Frame in
            frameDecoder.append(bytes)
            guard let frame = try frameDecoder.next() else {
                throw BenchmarkFailure(description: "a whole frame did not come out of the frame decoder")
            }
            return frame
        }
        let opened = try result.open.measure { try opener.open(frame) }
        return try result.decode.measure { try decoder.decode(opened) }
    }
}

/// The in-process session, stage by stage.
struct PipelineResult {
    /// A's `SyncNode` calls: reading pages (per feed, merged in canonical order) and the session.
    var sourceNode = Stopwatch()
    /// `MessageEncoder.encode`, both directions.
    var encode = Stopwatch()
    /// `FrameSealer.seal` and the frame's bytes, both directions.
    var seal = Stopwatch()
    /// Cutting frames out of the stream and `FrameOpener.open`, both directions.
    var open = Stopwatch()
    /// `MessageDecoder.decode`, both directions.
    var decode = Stopwatch()
    /// B's `SyncNode` calls: `EventLog.ingest` (store, fold, commit), the cursor read and the session.
    var targetNode = Stopwatch()
    var bytesToTarget = 0
    var bytesToSource = 0
    var framesToTarget = 0
    var batches = 0
    var eventsStored = 0

    /// Every stage, as (name, stopwatch), in pipeline order.
    var stages: [(String, Stopwatch)] {
        [
            ("A: `SyncNode` (read pages per feed, merge in canonical order, session)", sourceNode),
            ("encode (`MessageEncoder`)", encode),
            ("seal (`FrameSealer`, ChaCha20-Poly1305) and frame", seal),
            ("cut frames and open (`FrameDecoder`, `FrameOpener`)", open),
            ("decode (`MessageDecoder`)", decode),
            ("B: `SyncNode` (`EventLog.ingest`: store, fold, commit; cursor; session)", targetNode),
        ]
    }

    /// Wall time of every stage together: the rate one thread could sync at, with no overlap.
    var totalSeconds: Double { stages.reduce(0) { $0 + $1.1.seconds } }
}
