import Foundation
import Replica

/// Message types inside a sealed frame.
enum MessageType: UInt8 {
    case hello = 1
    case cursor = 2
    case events = 3
    case ack = 4
    case goodbye = 5
    case peers = 6
    case state = 7
    /// An `events` message as one zstd frame (docs/protocol.md "Compressed batches").
    case compressed = 8
    /// `Message.prune` (docs/protocol.md "Link pruning").
    case prune = 9
    /// `Message.graft`.
    case graft = 10
    /// `Message.revocations`.
    case revocations = 11
    /// `Message.certificates`.
    case certificates = 12
    /// `Message.forkProofs`.
    case forkProofs = 13
    /// `Message.heads`.
    case heads = 14
    /// `Message.checkpoints` (docs/protocol.md "Checkpoints over the wire").
    case checkpoints = 15
    /// `Message.checkpointAcks`.
    case checkpointAcks = 16
    /// `Message.basesWanted`.
    case basesWanted = 17
    /// `Message.bases`.
    case bases = 18
    /// `Message.historyFloor`.
    case historyFloor = 19
}

/// Optional abilities a side declares on a connection, as declarations of
/// the reserved feed `peersync/capability` with the ability as its scope.
/// A decoder that predates them keeps the declaration in its feed table and
/// never sees it again, so an older peer ignores them.
public enum WireCapability {
    /// The reserved replica id of capability declarations.
    public static let replicaID = FeedID.reservedReplicaIDPrefix + "capability"
    /// "I decode compressed batches (message type 8)."
    public static let zstd = FeedID(replicaID: replicaID, scope: "zstd")
    /// "I decode `prune` and `graft` (message types 9 and 10) and honour them."
    public static let pruning = FeedID(replicaID: replicaID, scope: "prune")
    /// "My `state` messages may end with my domain versions, and I read yours."
    public static let domainVersions = FeedID(replicaID: replicaID, scope: "domains")
}

/// Turns messages into the plaintext of sealed frames.
///
/// Feeds travel as small integers: the first message that names a feed on a
/// connection declares it (`index`, replica id, scope), later ones use the
/// index alone. So the encoder has one table per connection and direction,
/// and the channel must deliver in order, as the sealed channel guarantees.
public struct MessageEncoder: Sendable {
    private var feedIndexes: [FeedID: UInt64] = [:]
    /// The next index to declare: feeds and capabilities share the numbering.
    private var nextIndex: UInt64 = 0
    /// Whether this side offers compressed batches: it then declares
    /// `WireCapability.zstd` in its first message with declarations (the
    /// first `cursor`), and its decoder must be made with the same flag.
    public let offersCompression: Bool
    /// Whether the peer declared `WireCapability.zstd` (the shell copies
    /// `MessageDecoder.peerOffersCompression` of the other direction here).
    /// Batches are compressed only when both sides offer it.
    public var peerAcceptsCompression = false

    /// The smallest `events` plaintext that is compressed: a live push of a
    /// single event (about 100 bytes) always travels plain. From measurements
    /// of the benchmark's items (docs/decisions/010-wire-compression.md).
    public static let compressionThreshold = 1_024
    /// The zstd level of compressed batches.
    public static let compressionLevel: Int32 = 1

    /// Whether this side offers link pruning: it then declares
    /// `WireCapability.pruning` with its first declarations, as for compression.
    public let offersPruning: Bool
    /// Whether the peer declared `WireCapability.pruning` (the shell copies
    /// `MessageDecoder.peerOffersPruning` here); `prune` and `graft` are
    /// never sent to a peer that did not, since it could not decode them.
    public var peerAcceptsPruning = false

    /// Whether this side reads domain versions at the end of `state`
    /// (docs/protocol.md "Domain versions"): it then declares
    /// `WireCapability.domainVersions` with its first declarations.
    public let offersDomainVersions: Bool
    /// Whether the peer declared `WireCapability.domainVersions` (copied
    /// from `MessageDecoder.peerOffersDomainVersions`): only then does a
    /// `state` message carry this side's versions.
    public var peerAcceptsDomainVersions = false

    public init(compression: Bool = false, pruning: Bool = false, domainVersions: Bool = false) {
        offersCompression = compression
        offersPruning = pruning
        offersDomainVersions = domainVersions
    }

    /// Whether `message` may go to this peer: `prune` and `graft` only to
    /// one that declared `WireCapability.pruning`; the shell drops the rest
    /// (the peer then keeps pushing everything, as before pruning existed).
    public func carries(_ message: Message) -> Bool {
        switch message {
        case .prune, .graft: peerAcceptsPruning
        case .hello, .cursor, .events, .ack, .goodbye, .peers, .state, .revocations, .certificates, .forkProofs, .heads,
            .checkpoints, .checkpointAcks, .basesWanted, .bases, .historyFloor:
            true
        }
    }

    /// Whether `events` messages above the threshold go compressed.
    public var compresses: Bool { offersCompression && peerAcceptsCompression }

    public mutating func encode(_ message: Message) -> [UInt8] {
        switch message {
        case .hello(let hello):
            var writer = ByteWriter()
            writer.write(MessageType.hello.rawValue)
            writer.write(string: hello.replicaID)
            writer.write(hello.role.rawValue)
            writer.write(uint16: hello.listenPort)
            writer.write(uint16: hello.protocolVersion)
            if let identity = hello.identity {
                writer.write(1)
                writer.write(raw: identity.publicKey)
                writer.write(raw: identity.proof)
                writer.write(lengthPrefixed: identity.certificate?.bytes ?? [])
            } else {
                writer.write(0)
            }
            return writer.bytes
        case .cursor(let cursor):
            return encodeHeads(cursor, type: .cursor, batchID: nil)
        case .historyFloor(let floor):
            return encodeHeads(floor, type: .historyFloor, batchID: nil)
        case .ack(let batchID, let heads):
            return encodeHeads(heads, type: .ack, batchID: batchID)
        case .events(let batch):
            return compressedIfWorth(encodeEvents(batch))
        case .goodbye(let reason):
            var writer = ByteWriter()
            writer.write(MessageType.goodbye.rawValue)
            writer.write(string: String(reason.prefix(512)))
            return writer.bytes
        case .peers(let adverts):
            var writer = ByteWriter()
            writer.write(MessageType.peers.rawValue)
            writer.write(varint: UInt64(adverts.count))
            for advert in adverts {
                writer.write(string: advert.replicaID)
                writer.write(string: advert.address.host)
                writer.write(uint16: advert.address.port)
                writer.write(advert.role?.rawValue ?? 0)
            }
            return writer.bytes
        case .state(let summary):
            var writer = ByteWriter(capacity: 42)
            writer.write(MessageType.state.rawValue)
            writer.write(varint: UInt64(max(0, summary.eventCount)))
            writer.write(raw: summary.hash.bytes)
            if peerAcceptsDomainVersions {
                writer.write(varint: UInt64(summary.domains.count))
                for (type, version) in summary.domains.sorted(by: { $0.key < $1.key }) {
                    writer.write(string: type)
                    writer.write(varint: UInt64(max(0, version)))
                }
            }
            return writer.bytes
        case .prune(let origins):
            return encodeOrigins(origins, type: .prune)
        case .graft(let origins):
            return encodeOrigins(origins, type: .graft)
        case .revocations(let revocations):
            return Self.encodeStatements(revocations.map(\.bytes), type: .revocations)
        case .certificates(let certificates):
            return Self.encodeStatements(certificates.map(\.bytes), type: .certificates)
        case .forkProofs(let proofs):
            return Self.encodeForkProofs(proofs)
        case .heads(let heads):
            var writer = ByteWriter(capacity: 16 + heads.count * 140)
            writer.write(MessageType.heads.rawValue)
            writer.write(varint: UInt64(heads.count))
            for head in heads {
                writer.write(string: head.feed.replicaID)
                writer.write(string: head.feed.scope)
                Self.write(head, into: &writer)
            }
            return writer.bytes
        case .checkpoints(let checkpoints):
            return Self.encodeStatements(checkpoints.map(\.bytes), type: .checkpoints)
        case .checkpointAcks(let acks):
            return Self.encodeStatements(acks.map(\.bytes), type: .checkpointAcks)
        case .basesWanted(let checkpoint, let after):
            var writer = ByteWriter(capacity: 64)
            writer.write(MessageType.basesWanted.rawValue)
            // An empty replica sends this before its first cursor: its capabilities (zstd) go here.
            declare([], into: &writer)
            writer.write(raw: checkpoint)
            if let after {
                writer.write(1)
                writer.write(string: after.type)
                writer.write(string: after.id)
            } else {
                writer.write(0)
            }
            return writer.bytes
        case .bases(let checkpoint, let page, let last):
            var records: [UInt8] = []
            records.reserveCapacity(page.count * 160)
            for base in page { base.encode(into: &records) }
            var writer = ByteWriter(capacity: 48 + records.count)
            writer.write(MessageType.bases.rawValue)
            writer.write(raw: checkpoint)
            writer.write(last ? 1 : 0)
            writer.write(varint: UInt64(page.count))
            writer.write(lengthPrefixed: records)
            return compressedIfWorth(writer.bytes)
        }
    }

    /// `plain` (an `events` or `bases` message) as a `compressed` one, when
    /// both sides offer compression, it is above the threshold, and zstd makes it smaller.
    private func compressedIfWorth(_ plain: [UInt8]) -> [UInt8] {
        guard compresses, plain.count >= MessageEncoder.compressionThreshold else { return plain }
        let compressed = Zstd.compress(
            plain, level: MessageEncoder.compressionLevel, prefix: MessageType.compressed.rawValue)
        return compressed.count < plain.count ? compressed : plain
    }

    /// Type, varint count, then each signed statement (a revocation, a
    /// certificate, a checkpoint, an acknowledgement) length-prefixed.
    private static func encodeStatements(_ statements: [[UInt8]], type: MessageType) -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + statements.reduce(0) { $0 + $1.count + 3 })
        writer.write(type.rawValue)
        writer.write(varint: UInt64(statements.count))
        for statement in statements { writer.write(lengthPrefixed: statement) }
        return writer.bytes
    }

    /// Type, varint count, then each origin replica id as a string.
    private func encodeOrigins(_ origins: [String], type: MessageType) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(type.rawValue)
        writer.write(varint: UInt64(origins.count))
        for origin in origins { writer.write(string: origin) }
        return writer.bytes
    }

    private mutating func encodeHeads(_ heads: VectorCursor, type: MessageType, batchID: UInt64?) -> [UInt8] {
        let feeds = heads.feeds
        var writer = ByteWriter()
        writer.write(type.rawValue)
        declare(feeds, into: &writer)
        if let batchID { writer.write(varint: batchID) }
        writer.write(varint: UInt64(feeds.count))
        for feed in feeds {
            writer.write(varint: feedIndexes[feed]!)
            writer.write(varint: heads[feed])
        }
        return writer.bytes
    }

    /// Events go as runs of one feed: the feed, the first seq, the count,
    /// then each event's id, time (as a change from the previous event's),
    /// entity type, entity id and payload.
    private mutating func encodeEvents(_ batch: EventBatch) -> [UInt8] {
        var runs: [(feed: FeedID, events: ArraySlice<Event>)] = []
        var runStart = batch.events.startIndex
        for index in batch.events.indices.dropFirst() {
            let previous = batch.events[index - 1]
            let event = batch.events[index]
            if event.feed != previous.feed || event.seq != previous.seq + 1 {
                runs.append((previous.feed, batch.events[runStart..<index]))
                runStart = index
            }
        }
        if runStart < batch.events.endIndex {
            runs.append((batch.events[runStart].feed, batch.events[runStart...]))
        }
        var writer = ByteWriter(capacity: 64 + batch.events.count * 160)
        writer.write(MessageType.events.rawValue)
        declare(runs.map(\.feed), into: &writer)
        writer.write(varint: batch.batchID)
        writer.write(varint: UInt64(runs.count))
        for run in runs {
            writer.write(varint: feedIndexes[run.feed]!)
            writer.write(varint: run.events.first!.seq)
            writer.write(varint: UInt64(run.events.count))
            var previousTime: Int64 = 0
            for event in run.events {
                writer.write(raw: event.eventID.wireBytes)
                writer.write(zigzag: event.timeMs &- previousTime)
                previousTime = event.timeMs
                writer.write(string: event.entityType)
                writer.write(string: event.entityID)
                writer.write(string: event.payload)
            }
        }
        writer.write(varint: UInt64(batch.proofs.count))
        for (feed, proof) in batch.proofs.sorted(by: { $0.key < $1.key }) {
            writer.write(varint: feedIndexes[feed] ?? 0)
            writer.write(raw: proof.baseLink)
            Self.write(proof.head, into: &writer)
        }
        return writer.bytes
    }

    /// A signed head without its feed: seq, link, a signature flag and the signature.
    static func write(_ head: SignedHead, into writer: inout ByteWriter) {
        writer.write(varint: head.seq)
        writer.write(raw: head.link)
        if let signature = head.signature {
            writer.write(1)
            writer.write(raw: signature)
        } else {
            writer.write(0)
        }
    }

    /// Fork proofs: per proof the feed by name, both heads, the other
    /// chain's base link and its events (id, time, entity type, entity id,
    /// payload; their seqs follow from the other head's).
    static func encodeForkProofs(_ proofs: [ForkProof]) -> [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.write(MessageType.forkProofs.rawValue)
        writer.write(varint: UInt64(proofs.count))
        for proof in proofs {
            writer.write(string: proof.feed.replicaID)
            writer.write(string: proof.feed.scope)
            write(proof.held, into: &writer)
            write(proof.other, into: &writer)
            writer.write(raw: proof.otherBaseLink)
            writer.write(varint: UInt64(proof.otherEvents.count))
            for event in proof.otherEvents {
                writer.write(raw: event.eventID.wireBytes)
                writer.write(zigzag: event.timeMs)
                writer.write(string: event.entityType)
                writer.write(string: event.entityID)
                writer.write(string: event.payload)
            }
        }
        return writer.bytes
    }

    /// Writes the declarations of feeds this connection has not named yet.
    /// The first one also declares this side's capabilities.
    private mutating func declare(_ feeds: [FeedID], into writer: inout ByteWriter) {
        var new: [FeedID] = []
        if offersCompression && nextIndex == 0 {
            feedIndexes[WireCapability.zstd] = nextIndex
            nextIndex += 1
            new.append(WireCapability.zstd)
        }
        if offersPruning && feedIndexes[WireCapability.pruning] == nil {
            feedIndexes[WireCapability.pruning] = nextIndex
            nextIndex += 1
            new.append(WireCapability.pruning)
        }
        if offersDomainVersions && feedIndexes[WireCapability.domainVersions] == nil {
            feedIndexes[WireCapability.domainVersions] = nextIndex
            nextIndex += 1
            new.append(WireCapability.domainVersions)
        }
        for feed in feeds where feedIndexes[feed] == nil {
            feedIndexes[feed] = nextIndex
            nextIndex += 1
            new.append(feed)
        }
        writer.write(varint: UInt64(new.count))
        for feed in new {
            writer.write(varint: feedIndexes[feed]!)
            writer.write(string: feed.replicaID)
            writer.write(string: feed.scope)
        }
    }
}

extension UUID {
    /// The 16 bytes in the order the hex string prints them.
    var wireBytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }
}
