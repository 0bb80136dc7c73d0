import Foundation

/// A page of events for a peer, with what it needs to verify them: per
/// feed, the link before the page's first event of the feed and the
/// origin's signed head at its last (docs/protocol.md "Signed feeds").
public struct EventPage: Hashable, Sendable {
    public var events: [Event]
    public var proofs: [FeedID: FeedProof]

    public init(events: [Event] = [], proofs: [FeedID: FeedProof] = [:]) {
        self.events = events
        self.proofs = proofs
    }
}

/// Signs the heads of the feeds this replica writes (with its identity
/// key: `FeedSigner(SigningKey)` in SyncProtocol).
public struct FeedSigner: Sendable {
    /// The Ed25519 signature of a message.
    public var sign: @Sendable ([UInt8]) -> [UInt8]

    public init(sign: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.sign = sign
    }
}

extension EventLog {
    // MARK: - Reads

    /// Every feed's head as this replica holds it, signed where the origin's
    /// signature for that head is held, in feed order. Forked feeds are left out.
    public func signedHeads() throws -> [SignedHead] {
        try read {
            let statement = try db.statement(
                """
                SELECT id, replica_id, scope, head_seq, head_link, head_signature FROM feeds
                WHERE head_seq > 0 AND id NOT IN (SELECT feed FROM forked_feeds)
                """)
            var rows: [(row: Int64, feed: FeedID, seq: UInt64, link: [UInt8]?, signature: [UInt8]?)] = []
            while try statement.step() {
                rows.append(
                    (
                        statement.int64(0), FeedID(replicaID: statement.text(1), scope: statement.text(2)),
                        UInt64(statement.int64(3)), statement.isNull(4) ? nil : statement.blob(4),
                        statement.isNull(5) ? nil : statement.blob(5)
                    ))
            }
            return try rows.map { row in
                let link = try row.link ?? headLink(feed: row.feed, feedRow: row.row, head: row.seq)
                return SignedHead(feed: row.feed, seq: row.seq, link: link, signature: row.signature)
            }.sorted { $0.feed < $1.feed }
        }
    }

    /// The page with each feed's run ending at a head its origin signed,
    /// and the proofs for it. A feed this replica writes is signed where its
    /// run ends, so a catch-up from the origin is cut nowhere. Another's is
    /// cut back to the last signed head held in its run, or read on to the
    /// next one. A feed no key signed keeps its run, with an unsigned head
    /// that a verifying peer refuses.
    public func signed(_ page: [Event]) throws -> EventPage {
        guard !page.isEmpty else { return EventPage() }
        return try read {
            try refreshCoveredEvents()  // another connection may have taken a checkpoint
            var events = page
            var proofs: [FeedID: FeedProof] = [:]
            for (feed, run) in Self.runs(of: page).sorted(by: { $0.key < $1.key }) {
                guard let row = try feedRowID(feed, create: false) else { continue }
                let base = try link(of: feed, feedRow: row, at: run.lowerBound - 1)
                let ownLink = { FeedChain.link(after: base, events.lazy.filter { $0.feed == feed }) }
                if feed.origin == replicaID, let own = sign(feed, seq: run.upperBound, link: ownLink()) {
                    proofs[feed] = FeedProof(baseLink: base, head: own)
                    continue
                }
                var end = try lastSignedSeq(feedRow: row, in: run)
                if end == nil, let next = try firstSignedSeq(feedRow: row, after: run.upperBound) {
                    events += try self.events(in: feed, seqs: (run.upperBound + 1)...next, limit: Int.max).map(\.event)
                    end = next
                }
                let head: SignedHead
                if let end, let held = try signature(feedRow: row, seq: end) {
                    head = SignedHead(feed: feed, seq: end, link: held.link, signature: held.signature)
                } else {
                    head = SignedHead(feed: feed, seq: run.upperBound, link: ownLink(), signature: nil)
                }
                if head.seq < run.upperBound { events.removeAll { $0.feed == feed && $0.seq > head.seq } }
                if head.seq >= run.lowerBound { proofs[feed] = FeedProof(baseLink: base, head: head) }
            }
            return EventPage(events: events, proofs: proofs)
        }
    }

    /// Each feed's seqs in `events`, first to last.
    private static func runs(of events: [Event]) -> [FeedID: ClosedRange<UInt64>] {
        var runs: [FeedID: ClosedRange<UInt64>] = [:]
        for event in events {
            let run = runs[event.feed]
            runs[event.feed] =
                min(run?.lowerBound ?? event.seq, event.seq)...max(run?.upperBound ?? event.seq, event.seq)
        }
        return runs
    }

    /// The fork proofs this replica holds, one per quarantined feed, in feed order.
    public func forkProofs() throws -> [ForkProof] {
        try read {
            let statement = try db.statement(
                """
                SELECT f.replica_id, f.scope, k.held_seq, k.held_link, k.held_signature, k.other_seq, k.other_link,
                       k.other_signature, k.other_base_link, k.other_events
                FROM forked_feeds k JOIN feeds f ON f.id = k.feed ORDER BY f.replica_id, f.scope
                """)
            var proofs: [ForkProof] = []
            while try statement.step() {
                let feed = FeedID(replicaID: statement.text(0), scope: statement.text(1))
                let events = try statement.text(9).split(separator: "\n").map {
                    try EventJSON.event(fromLine: String($0))
                }
                proofs.append(
                    ForkProof(
                        held: SignedHead(
                            feed: feed, seq: UInt64(statement.int64(2)), link: statement.blob(3),
                            signature: statement.isNull(4) ? nil : statement.blob(4)),
                        other: SignedHead(
                            feed: feed, seq: UInt64(statement.int64(5)), link: statement.blob(6),
                            signature: statement.blob(7)),
                        otherBaseLink: statement.blob(8), otherEvents: events))
            }
            return proofs
        }
    }

    /// Quarantines the feed of a fork proof that one of the origin's `keys`
    /// proves, unless it is quarantined already; true when it was not.
    @discardableResult
    public func quarantineFork(_ proof: ForkProof, keys: [[UInt8]]) throws -> Bool {
        guard proof.proves(keys: keys) else { return false }
        return try write {
            guard let row = try feedRowID(proof.feed, create: true), try !isForked(feedRow: row) else { return false }
            try recordFork(proof, feedRow: row)
            return true
        }
    }

    /// The forks a peer's signed heads prove: each head one of `keys`
    /// signed whose seq this replica holds with another link. Each proven
    /// fork's feed is quarantined; the proofs are returned.
    public func forks(shownBy heads: [SignedHead], keys: FeedKeys) throws -> [ForkProof] {
        let signed = heads.filter { $0.isSigned(byOneOf: keys.keys(for: $0.feed)) }
        guard !signed.isEmpty else { return [] }
        return try write {
            var proofs: [ForkProof] = []
            for theirs in signed {
                guard let row = try feedRowID(theirs.feed, create: false), try !isForked(feedRow: row) else { continue }
                let held: SignedHead
                if let ours = try signature(feedRow: row, seq: theirs.seq) {
                    held = SignedHead(feed: theirs.feed, seq: theirs.seq, link: ours.link, signature: ours.signature)
                } else if try headSeq(feedRow: row) == theirs.seq {
                    let link = try headLink(feed: theirs.feed, feedRow: row, head: theirs.seq)
                    held = SignedHead(feed: theirs.feed, seq: theirs.seq, link: link, signature: nil)
                } else {
                    continue
                }
                guard held.link != theirs.link else { continue }
                let proof = ForkProof(held: held, other: theirs, otherBaseLink: theirs.link, otherEvents: [])
                try recordFork(proof, feedRow: row)
                proofs.append(proof)
            }
            return proofs
        }
    }

    /// Keeps certificates (their bytes, read and checked by the caller), by replica id.
    public func storeCertificates(_ certificates: [(replicaID: String, bytes: [UInt8])]) throws {
        guard !certificates.isEmpty else { return }
        try write {
            for certificate in certificates {
                try db.statement("INSERT OR IGNORE INTO certificates (replica_id, bytes) VALUES (?, ?)")
                    .run([.text(certificate.replicaID), .blob(certificate.bytes)])
            }
        }
    }

    /// The certificates kept, by replica id.
    public func certificates() throws -> [[UInt8]] {
        try read {
            let statement = try db.statement("SELECT bytes FROM certificates ORDER BY replica_id, bytes")
            var result: [[UInt8]] = []
            while try statement.step() { result.append(statement.blob(0)) }
            return result
        }
    }

    // MARK: - Inside transactions

    /// The link at the feed's head `head`, computed from the events for a
    /// feed stored before signed feeds.
    func headLink(feed: FeedID, feedRow: Int64, head: UInt64) throws -> [UInt8] {
        guard head > 0 else { return FeedChain.genesis }
        let statement = try db.statement("SELECT head_link FROM feeds WHERE id = ?")
        try statement.bind([.int(feedRow)])
        if try statement.step(), !statement.isNull(0) { return statement.blob(0) }
        return try computedLink(feed: feed, from: (0, FeedChain.genesis), through: head)
    }

    /// The link at `seq` (at most the head) of a feed.
    func link(of feed: FeedID, feedRow: Int64, at seq: UInt64) throws -> [UInt8] {
        guard seq > 0 else { return FeedChain.genesis }
        if let signed = try signature(feedRow: feedRow, seq: seq) { return signed.link }
        let head = try headSeq(feedRow: feedRow)
        if seq == head { return try headLink(feed: feed, feedRow: feedRow, head: head) }
        let statement = try db.statement(
            "SELECT seq, link FROM feed_signatures WHERE feed = ? AND seq < ? ORDER BY seq DESC LIMIT 1")
        try statement.bind([.int(feedRow), .int(Int64(seq))])
        var start = try statement.step() ? (UInt64(statement.int64(0)), statement.blob(1)) : (0, FeedChain.genesis)
        // A checkpoint's link is a start too: a log that started from one, or dropped
        // its history, holds no event below it. The held one and the floor are the starts.
        for checkpoint in [covered.content, covered.floor].compactMap({ $0 }) {
            let at = checkpoint.cursor[feed]
            if at > start.0, at <= seq, let link = checkpoint.links[feed] { start = (at, link) }
        }
        return try computedLink(feed: feed, from: start, through: seq)
    }

    /// The link at `seq`, from the link `start.link` at `start.seq`, over the stored events between.
    private func computedLink(feed: FeedID, from start: (seq: UInt64, link: [UInt8]), through seq: UInt64) throws
        -> [UInt8]
    {
        var link = start.link
        var next = start.seq + 1
        while next <= seq {
            let chunk = try events(in: feed, seqs: next...seq, limit: 4_096)
            guard let last = chunk.last, chunk.first?.event.seq == next else {
                throw EventLogError.corrupt(path: path, reason: "feed \(feed) has no event at seq \(next)")
            }
            link = FeedChain.link(after: link, chunk.lazy.map(\.event))
            next = last.event.seq + 1
        }
        return link
    }

    /// Moves a feed's head, with the link there and, when held, the
    /// origin's signature of it: kept in the feed's row, which every write
    /// of the feed updates anyway, so a signed head costs no page of its own.
    func setHead(_ seq: UInt64, link: [UInt8], feedRow: Int64, signed: SignedHead? = nil) throws {
        try db.statement("UPDATE feeds SET head_seq = ?, head_link = ?, head_signature = ? WHERE id = ?")
            .run([.int(Int64(seq)), .blob(link), signed?.signature.map { .blob($0) } ?? .null, .int(feedRow)])
        if let signed, signed.signature != nil { signedByLastWrite.append(signed) }
    }

    /// Keeps a signed head below the feed's head: a point a page may end at.
    func keepSignedPoint(_ head: SignedHead, feedRow: Int64) throws {
        guard let signature = head.signature else { return }
        try db.statement("INSERT OR REPLACE INTO feed_signatures (feed, seq, link, signature) VALUES (?, ?, ?, ?)")
            .run([.int(feedRow), .int(Int64(head.seq)), .blob(head.link), .blob(signature)])
    }

    /// This replica's signature of a head of a feed it writes; nil without a signer.
    func sign(_ feed: FeedID, seq: UInt64, link: [UInt8]) -> SignedHead? {
        guard let signer = options.feedSigner else { return nil }
        let signature = signer.sign(FeedChain.headMessage(feed: feed, seq: seq, link: link))
        return SignedHead(feed: feed, seq: seq, link: link, signature: signature)
    }

    /// The link and signature of a signed head held at `seq`: a signed
    /// point, or the feed's head when its signature is held.
    func signature(feedRow: Int64, seq: UInt64) throws -> (link: [UInt8], signature: [UInt8])? {
        let statement = try db.statement("SELECT link, signature FROM feed_signatures WHERE feed = ? AND seq = ?")
        try statement.bind([.int(feedRow), .int(Int64(seq))])
        if try statement.step() { return (statement.blob(0), statement.blob(1)) }
        guard let head = try signedHeadRow(feedRow: feedRow), head.seq == seq else { return nil }
        return (head.link, head.signature)
    }

    /// The feed's head when its signature is held.
    private func signedHeadRow(feedRow: Int64) throws -> (seq: UInt64, link: [UInt8], signature: [UInt8])? {
        let statement = try db.statement(
            """
            SELECT head_seq, head_link, head_signature FROM feeds
            WHERE id = ? AND head_signature IS NOT NULL AND length(head_link) = 32
            """)
        try statement.bind([.int(feedRow)])
        return try statement.step() ? (UInt64(statement.int64(0)), statement.blob(1), statement.blob(2)) : nil
    }

    private func lastSignedSeq(feedRow: Int64, in seqs: ClosedRange<UInt64>) throws -> UInt64? {
        if let head = try signedHeadRow(feedRow: feedRow), seqs.contains(head.seq) { return head.seq }
        let statement = try db.statement(
            "SELECT max(seq) FROM feed_signatures WHERE feed = ? AND seq BETWEEN ? AND ?")
        try statement.bind([.int(feedRow), .int(Int64(seqs.lowerBound)), .int(Int64(seqs.upperBound))])
        return try statement.step() && !statement.isNull(0) ? UInt64(statement.int64(0)) : nil
    }

    private func firstSignedSeq(feedRow: Int64, after seq: UInt64) throws -> UInt64? {
        let statement = try db.statement("SELECT min(seq) FROM feed_signatures WHERE feed = ? AND seq > ?")
        try statement.bind([.int(feedRow), .int(Int64(seq))])
        if try statement.step(), !statement.isNull(0) { return UInt64(statement.int64(0)) }
        guard let head = try signedHeadRow(feedRow: feedRow), head.seq > seq else { return nil }
        return head.seq
    }

    /// After a receiver moved a feed's head from `old` to `head`: the new
    /// head's signature is kept as a signed point too when the run was a
    /// bulk one (a catch-up batch: its end is where a page served on may
    /// end, as the sender's did) or crossed a multiple of
    /// `signedPointInterval`; a feed received a few events at a time (live
    /// pushes) keeps a point every 256 seqs or so, not one per batch.
    func keepCrossingPoint(_ head: SignedHead, from old: UInt64, feedRow: Int64) throws {
        guard
            head.seq - old >= UInt64(EventLog.blockMinimumEvents)
                || old / EventLog.signedPointInterval < head.seq / EventLog.signedPointInterval
        else { return }
        try keepSignedPoint(head, feedRow: feedRow)
    }

    func isForked(feedRow: Int64) throws -> Bool {
        let statement = try db.statement("SELECT 1 FROM forked_feeds WHERE feed = ?")
        try statement.bind([.int(feedRow)])
        return try statement.step()
    }

    func recordFork(_ proof: ForkProof, feedRow: Int64) throws {
        let events = proof.otherEvents.map { EventJSON.line(for: $0, offset: nil, arrivalTimeMs: nil) }
        try db.statement(
            """
            INSERT OR IGNORE INTO forked_feeds (feed, held_seq, held_link, held_signature, other_seq, other_link,
                other_signature, other_base_link, other_events, detected_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run([
            .int(feedRow), .int(Int64(proof.held.seq)), .blob(proof.held.link),
            proof.held.signature.map { .blob($0) } ?? .null, .int(Int64(proof.other.seq)), .blob(proof.other.link),
            .blob(proof.other.signature ?? []), .blob(proof.otherBaseLink), .text(events.joined(separator: "\n")),
            .int(options.wallClock()),
        ])
    }
}

/// A feed's head while a transaction appends to it: its row, seq and link.
struct FeedHead {
    let feed: FeedID
    let row: Int64
    var seq: UInt64
    var link: [UInt8]

    mutating func extend(with event: Event) {
        seq = event.seq
        link = FeedChain.link(after: link, event)
    }
}

extension EventLog {
    /// The head of a feed this replica writes, to append to; refused for a
    /// feed its own fork quarantined.
    func feedHead(of feed: FeedID) throws -> FeedHead {
        let row = try feedRowID(feed, create: true)!
        if try isForked(feedRow: row) { throw EventLogError.feedForked(feed: feed) }
        let seq = try headSeq(feedRow: row)
        return FeedHead(feed: feed, row: row, seq: seq, link: try headLink(feed: feed, feedRow: row, head: seq))
    }

    /// A feed this replica writes is signed at least every this many
    /// events, however many one transaction writes, so that a page for a
    /// peer can end within that many events of where it is cut (and a
    /// damaged page of the file keeps only that much of the feed from
    /// peers); each transaction signs its last head too.
    static let signedPointInterval: UInt64 = 256

    /// Signs the head of a feed being written when it is at a signed point.
    func signPointIfDue(_ head: FeedHead) throws {
        guard head.seq % EventLog.signedPointInterval == 0,
            let signed = sign(head.feed, seq: head.seq, link: head.link)
        else { return }
        try keepSignedPoint(signed, feedRow: head.row)
    }

    /// Stores the new heads of feeds this replica wrote, each signed.
    func finishOwn(_ heads: [FeedID: FeedHead]) throws {
        for head in heads.values {
            try setHead(
                head.seq, link: head.link, feedRow: head.row, signed: sign(head.feed, seq: head.seq, link: head.link))
        }
    }
}
