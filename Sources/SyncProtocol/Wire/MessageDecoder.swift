import Foundation
import PeerNet
import Replica

/// Reads the plaintext of sealed frames back into messages, keeping the
/// connection's table of declared feeds. Any violation throws `WireError`.
public struct MessageDecoder: Sendable {
    /// Declared feeds by index; `nil` where the peer declared a capability.
    private var feeds: [FeedID?] = []
    /// Whether this side offered compressed batches (its encoder declared
    /// `WireCapability.zstd`); a compressed message is refused otherwise.
    public let acceptsCompression: Bool
    /// Whether the peer declared `WireCapability.zstd`: it decodes compressed batches.
    public private(set) var peerOffersCompression = false
    /// Whether the peer declared `WireCapability.pruning`: it decodes `prune` and `graft`.
    public private(set) var peerOffersPruning = false
    /// Whether this side declared `WireCapability.domainVersions`: a
    /// `state` message may then end with the peer's domain versions.
    public let acceptsDomainVersions: Bool
    /// Whether the peer declared `WireCapability.domainVersions`.
    public private(set) var peerOffersDomainVersions = false
    /// The most domain versions one `state` message may carry.
    public static let maximumDomains = 4_096
    /// The most feeds one connection may declare.
    public static let maximumFeeds = 1 << 20
    /// The most addresses one peer-exchange message may carry.
    public static let maximumAdverts = 1_024

    public init(compression: Bool = false, domainVersions: Bool = false) {
        acceptsCompression = compression
        acceptsDomainVersions = domainVersions
    }

    /// The most bytes a compressed message may declare: what one sealed
    /// frame could carry plain.
    public static let maximumDecompressedSize = FrameSealer.maximumPlaintextSize

    public mutating func decode(_ bytes: [UInt8]) throws -> Message {
        guard bytes.first == MessageType.compressed.rawValue else { return try decodePlain(bytes) }
        guard acceptsCompression else {
            throw WireError.malformed("compressed message, but this node did not offer compression")
        }
        let content = try Zstd.decompress(bytes[1...], limit: MessageDecoder.maximumDecompressedSize)
        guard content.first == MessageType.events.rawValue || content.first == MessageType.bases.rawValue else {
            let type = content.first.map { "type \($0)" } ?? "nothing"
            throw WireError.malformed("compressed message holds \(type); only events and bases may be compressed")
        }
        return try decodePlain(content)
    }

    private mutating func decodePlain(_ bytes: [UInt8]) throws -> Message {
        var reader = ByteReader(bytes)
        let typeByte = try reader.readByte("message type")
        guard let type = MessageType(rawValue: typeByte) else { throw WireError.unknownMessageType(typeByte) }
        let message: Message
        switch type {
        case .compressed:
            throw WireError.malformed("a compressed message inside a compressed message")
        case .hello:
            let replicaID = try reader.readString("replica id")
            guard !replicaID.isEmpty else { throw WireError.malformed("empty replica id") }
            let roleByte = try reader.readByte("role")
            guard let role = NodeRole(rawValue: roleByte) else { throw WireError.malformed("role \(roleByte)") }
            let port = try reader.readUInt16("listen port")
            let version = try reader.readUInt16("protocol version")
            message = .hello(
                Hello(
                    replicaID: replicaID, role: role, listenPort: port, protocolVersion: version,
                    identity: try readIdentity(&reader)))
        case .cursor:
            try readDeclarations(&reader)
            message = .cursor(try readHeads(&reader))
        case .historyFloor:
            try readDeclarations(&reader)
            message = .historyFloor(try readHeads(&reader))
        case .ack:
            try readDeclarations(&reader)
            let batchID = try reader.readVarint("batch id")
            message = .ack(batchID: batchID, heads: try readHeads(&reader))
        case .events:
            try readDeclarations(&reader)
            message = .events(try readEvents(&reader))
        case .goodbye:
            message = .goodbye(reason: try reader.readString("reason"))
        case .peers:
            let count = try reader.readCount("peer count", minimumElementSize: 5)
            guard count <= MessageDecoder.maximumAdverts else {
                throw WireError.malformed("\(count) peers in one message")
            }
            var adverts: [PeerAdvert] = []
            for _ in 0..<count {
                let replicaID = try reader.readString("peer replica id")
                let host = try reader.readString("peer host")
                let port = try reader.readUInt16("peer port")
                guard !replicaID.isEmpty, !host.isEmpty, host.utf8.count <= 255, port != 0 else {
                    throw WireError.malformed("peer address \(host):\(port)")
                }
                let roleByte = try reader.readByte("peer role")
                let role = NodeRole(rawValue: roleByte)
                guard role != nil || roleByte == 0 else { throw WireError.malformed("peer role \(roleByte)") }
                adverts.append(
                    PeerAdvert(replicaID: replicaID, address: PeerAddress(host: host, port: port), role: role))
            }
            message = .peers(adverts)
        case .state:
            let count = try reader.readVarint("event count")
            guard count <= UInt64(Int64.max) else { throw WireError.malformed("event count \(count)") }
            guard let hash = StateHash(bytes: try reader.readRaw(32, "state hash")) else {
                throw WireError.truncated("state hash")
            }
            var domains: [String: Int64] = [:]
            if acceptsDomainVersions && !reader.isAtEnd {
                let entries = try reader.readCount("domain count", minimumElementSize: 2)
                guard entries <= MessageDecoder.maximumDomains else {
                    throw WireError.malformed("\(entries) domain versions in one state message")
                }
                for _ in 0..<entries {
                    let type = try reader.readString("domain entity type")
                    let version = try reader.readVarint("domain version")
                    guard !type.isEmpty, version <= UInt64(Int64.max), domains[type] == nil else {
                        throw WireError.malformed("domain version \(type)=\(version)")
                    }
                    domains[type] = Int64(version)
                }
            }
            message = .state(StateSummary(eventCount: Int64(count), hash: hash, domains: domains))
        case .prune:
            message = .prune(origins: try readOrigins(&reader))
        case .graft:
            message = .graft(origins: try readOrigins(&reader))
        case .revocations:
            message = .revocations(
                try Self.readStatements(&reader, "revocation", most: MessageDecoder.maximumAdverts, Revocation.init))
        case .certificates:
            message = .certificates(
                try Self.readStatements(&reader, "certificate", most: MessageDecoder.maximumFeeds, Certificate.init))
        case .forkProofs:
            message = .forkProofs(try readForkProofs(&reader))
        case .heads:
            let count = try reader.readCount("head count", minimumElementSize: 38)
            var heads: [SignedHead] = []
            for _ in 0..<count {
                let replicaID = try reader.readString("head replica id")
                let scope = try reader.readString("head scope")
                guard !replicaID.isEmpty, !scope.isEmpty else { throw WireError.malformed("empty feed name in heads") }
                heads.append(try readSignedHead(&reader, feed: FeedID(replicaID: replicaID, scope: scope)))
            }
            message = .heads(heads)
        case .checkpoints:
            message = .checkpoints(try Self.readStatements(&reader, "checkpoint", most: .max, SignedCheckpoint.init))
        case .checkpointAcks:
            message = .checkpointAcks(
                try Self.readStatements(&reader, "acknowledgement", most: .max, CheckpointAck.init))
        case .basesWanted:
            try readDeclarations(&reader)
            let checkpoint = try reader.readRaw(32, "checkpoint id")
            switch try reader.readByte("resume flag") {
            case 0:
                message = .basesWanted(checkpoint: checkpoint, after: nil)
            case 1:
                let after = EntityName(
                    type: try reader.readString("entity type"), id: try reader.readString("entity id"))
                message = .basesWanted(checkpoint: checkpoint, after: after)
            case let flag:
                throw WireError.malformed("resume flag \(flag)")
            }
        case .bases:
            let checkpoint = try reader.readRaw(32, "checkpoint id")
            let last: Bool
            switch try reader.readByte("last flag") {
            case 0: last = false
            case 1: last = true
            case let flag: throw WireError.malformed("last flag \(flag)")
            }
            let records = try reader.readCount("base count", minimumElementSize: 1)
            let bytes = try reader.readLengthPrefixed("bases")
            guard records <= bytes.count / EntityBase.minimumEncodedSize else {
                throw WireError.malformed("\(records) bases in \(bytes.count) bytes")
            }
            var page: [EntityBase] = []
            page.reserveCapacity(records)
            var position = 0
            do {
                for _ in 0..<records { page.append(try EntityBase.decode(bytes, at: &position)) }
            } catch let error as CheckpointError {
                throw WireError.malformed("bases: \(error)")
            }
            guard position == bytes.count else { throw WireError.malformed("bytes left after \(records) bases") }
            message = .bases(checkpoint: checkpoint, page: page, last: last)
        }
        try reader.expectEnd(message.name)
        return message
    }

    /// A varint count (at most `most`), then each `kind` length-prefixed,
    /// read by `parse`; one that does not read or whose signature fails
    /// makes the message malformed.
    private static func readStatements<Statement>(
        _ reader: inout ByteReader, _ kind: String, most: Int, _ parse: ([UInt8]) throws -> Statement
    ) throws -> [Statement] {
        let count = try reader.readCount("\(kind) count", minimumElementSize: 1)
        guard count <= most else { throw WireError.malformed("\(count) \(kind)s in one message") }
        var statements: [Statement] = []
        for _ in 0..<count {
            let bytes = try reader.readLengthPrefixed(kind)
            do {
                statements.append(try parse(bytes))
            } catch {
                throw WireError.malformed("\(kind)s: \(error)")
            }
        }
        return statements
    }

    private mutating func readDeclarations(_ reader: inout ByteReader) throws {
        let count = try reader.readCount("feed declarations", minimumElementSize: 3)
        for _ in 0..<count {
            let index = try reader.readVarint("feed index")
            guard index == UInt64(feeds.count) else {
                throw WireError.malformed("feed declared as \(index), expected \(feeds.count)")
            }
            guard feeds.count < MessageDecoder.maximumFeeds else { throw WireError.malformed("too many feeds") }
            let replicaID = try reader.readString("feed replica id")
            let scope = try reader.readString("feed scope")
            guard !replicaID.isEmpty, !scope.isEmpty else { throw WireError.malformed("empty feed name") }
            let feed = FeedID(replicaID: replicaID, scope: scope)
            if feed.replicaID.utf8.elementsEqual(WireCapability.replicaID.utf8) {
                // A capability: it takes an index, is never a feed; unknown ones are ignored.
                if feed == WireCapability.zstd { peerOffersCompression = true }
                if feed == WireCapability.pruning { peerOffersPruning = true }
                if feed == WireCapability.domainVersions { peerOffersDomainVersions = true }
                feeds.append(nil)
            } else {
                feeds.append(feed)
            }
        }
    }

    /// The identity section of a `hello`.
    private func readIdentity(_ reader: inout ByteReader) throws -> PeerIdentity? {
        switch try reader.readByte("identity flag") {
        case 0:
            return nil
        case 1:
            let publicKey = try reader.readRaw(32, "identity key")
            let proof = try reader.readRaw(64, "identity proof")
            let certificate = try reader.readLengthPrefixed("certificate")
            do {
                return PeerIdentity(
                    publicKey: publicKey, proof: proof,
                    certificate: certificate.isEmpty ? nil : try Certificate(bytes: certificate))
            } catch {
                throw WireError.malformed("hello: \(error)")
            }
        case let flag:
            throw WireError.malformed("identity flag \(flag)")
        }
    }

    /// The origin replica ids of a `prune` or `graft`.
    private func readOrigins(_ reader: inout ByteReader) throws -> [String] {
        let count = try reader.readCount("origin count", minimumElementSize: 2)
        guard count <= MessageDecoder.maximumFeeds else { throw WireError.malformed("\(count) origins in one message") }
        var origins: [String] = []
        for _ in 0..<count {
            let origin = try reader.readString("origin replica id")
            guard !origin.isEmpty else { throw WireError.malformed("empty origin replica id") }
            origins.append(origin)
        }
        return origins
    }

    private func readFeed(_ reader: inout ByteReader) throws -> FeedID {
        let index = try reader.readVarint("feed index")
        guard index < UInt64(feeds.count) else { throw WireError.malformed("undeclared feed \(index)") }
        guard let feed = feeds[Int(index)] else { throw WireError.malformed("feed \(index) is a capability") }
        return feed
    }

    private func readHeads(_ reader: inout ByteReader) throws -> VectorCursor {
        let count = try reader.readCount("head count", minimumElementSize: 2)
        var heads = VectorCursor()
        for _ in 0..<count {
            let feed = try readFeed(&reader)
            heads[feed] = try reader.readVarint("head")
        }
        return heads
    }

    private func readEvents(_ reader: inout ByteReader) throws -> EventBatch {
        let batchID = try reader.readVarint("batch id")
        let runCount = try reader.readCount("run count", minimumElementSize: 3)
        var events: [Event] = []
        for _ in 0..<runCount {
            let feed = try readFeed(&reader)
            let firstSeq = try reader.readVarint("first seq")
            let count = try reader.readCount("event count", minimumElementSize: 20)
            guard firstSeq >= 1, firstSeq <= UInt64.max - UInt64(count) else {
                throw WireError.malformed("seq range starting at \(firstSeq)")
            }
            var time: Int64 = 0
            for offset in 0..<count {
                guard let eventID = UUID(wireBytes: try reader.readRaw(16, "event id")) else {
                    throw WireError.truncated("event id")
                }
                time = time &+ (try reader.readZigzag("time"))
                events.append(
                    Event(
                        eventID: eventID, feed: feed, seq: firstSeq + UInt64(offset), timeMs: time,
                        entityType: try reader.readString("entity type"),
                        entityID: try reader.readString("entity id"),
                        payload: try reader.readString("payload")))
            }
        }
        let proofCount = try reader.readCount("proof count", minimumElementSize: 67)
        var proofs: [FeedID: FeedProof] = [:]
        for _ in 0..<proofCount {
            let feed = try readFeed(&reader)
            let baseLink = try reader.readRaw(FeedChain.linkSize, "base link")
            proofs[feed] = FeedProof(baseLink: baseLink, head: try readSignedHead(&reader, feed: feed))
        }
        return EventBatch(batchID: batchID, events: events, proofs: proofs)
    }

    private func readSignedHead(_ reader: inout ByteReader, feed: FeedID) throws -> SignedHead {
        let seq = try reader.readVarint("head seq")
        let link = try reader.readRaw(FeedChain.linkSize, "head link")
        let signature: [UInt8]?
        switch try reader.readByte("signature flag") {
        case 0: signature = nil
        case 1: signature = try reader.readRaw(FeedChain.signatureSize, "signature")
        case let flag: throw WireError.malformed("signature flag \(flag)")
        }
        return SignedHead(feed: feed, seq: seq, link: link, signature: signature)
    }

    private func readForkProofs(_ reader: inout ByteReader) throws -> [ForkProof] {
        let count = try reader.readCount("fork proof count", minimumElementSize: 140)
        var proofs: [ForkProof] = []
        for _ in 0..<count {
            let replicaID = try reader.readString("fork replica id")
            let scope = try reader.readString("fork scope")
            guard !replicaID.isEmpty, !scope.isEmpty else {
                throw WireError.malformed("empty feed name in a fork proof")
            }
            let feed = FeedID(replicaID: replicaID, scope: scope)
            let held = try readSignedHead(&reader, feed: feed)
            let other = try readSignedHead(&reader, feed: feed)
            guard other.signature != nil else { throw WireError.malformed("fork proof with an unsigned head") }
            let baseLink = try reader.readRaw(FeedChain.linkSize, "fork base link")
            let eventCount = try reader.readCount("fork event count", minimumElementSize: 20)
            guard UInt64(eventCount) <= other.seq else {
                throw WireError.malformed("fork proof of \(eventCount) events")
            }
            let baseSeq = other.seq - UInt64(eventCount)
            var events: [Event] = []
            for index in 0..<eventCount {
                guard let eventID = UUID(wireBytes: try reader.readRaw(16, "event id")) else {
                    throw WireError.truncated("event id")
                }
                events.append(
                    Event(
                        eventID: eventID, feed: feed, seq: baseSeq + 1 + UInt64(index),
                        timeMs: try reader.readZigzag("time"), entityType: try reader.readString("entity type"),
                        entityID: try reader.readString("entity id"), payload: try reader.readString("payload")))
            }
            proofs.append(ForkProof(held: held, other: other, otherBaseLink: baseLink, otherEvents: events))
        }
        return proofs
    }
}

extension UUID {
    init?(wireBytes bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
    }
}
