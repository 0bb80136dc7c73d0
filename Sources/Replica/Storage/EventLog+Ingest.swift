import Foundation

extension EventLog {
    /// Stores events received from another replica (sync or import) in one
    /// transaction and folds them.
    ///
    /// With `proofs` (every sync, and an import of a signed export), each
    /// feed's events must be one run ending at the head its proof's origin
    /// signed with one of `keys`, chained from the proof's base link: a run
    /// that is not is refused whole (`IngestReport.refused`), and one that
    /// is but does not chain onto what this replica holds proves a fork of
    /// the feed, which is quarantined from then on (`forkProofs`). Without
    /// `proofs` (an unsigned import, tests), per feed in seq order: an event
    /// already held is ignored; one that collides with a held event is
    /// quarantined as a fork; one past a gap is not stored (the next round
    /// fills the gap). Nothing held is ever overwritten.
    @discardableResult
    public func ingest(_ batch: [Event], proofs: [FeedID: FeedProof]? = nil, keys: FeedKeys = FeedKeys()) throws
        -> IngestReport
    {
        guard !batch.isEmpty else { return IngestReport() }
        var points: [FeedID: [UInt64: SignedHead]] = [:]
        return try write { try ingestInTransaction(batch, proofs: proofs, keys: keys, vouched: [], points: &points) }
    }

    /// Stores a batch of a file `peerd import` verified whole first
    /// (docs/events.md "Import"), unverified as above, and in the same
    /// transaction keeps each of `heads` (signed heads and points the file
    /// carried) whose seq the feed now reaches with the same link, so that
    /// every committed prefix of an imported feed is served on with a
    /// proof, even to a peer syncing while the import runs. The heads of
    /// `vouched` feeds (an adoption of unsigned history) are signed with
    /// this replica's key as they are stored, as its own feeds are.
    @discardableResult
    public func ingest(_ batch: [Event], adopting heads: [SignedHead], vouched: Set<FeedID> = []) throws
        -> IngestReport
    {
        guard !batch.isEmpty || !heads.isEmpty else { return IngestReport() }
        return try write {
            // Checked against the links the ingest computes as it stores; the rest (at seqs held already) after.
            var points: [FeedID: [UInt64: SignedHead]] = [:]
            for head in heads where head.signature != nil { points[head.feed, default: [:]][head.seq] = head }
            let report =
                batch.isEmpty
                ? IngestReport()
                : try ingestInTransaction(batch, proofs: nil, keys: FeedKeys(), vouched: vouched, points: &points)
            try adoptInTransaction(points.values.flatMap(\.values))
            return report
        }
    }

    /// `points`: per feed, signed heads to keep where the chain being
    /// stored meets them (an import's); those kept are taken out.
    func ingestInTransaction(
        _ batch: [Event], proofs: [FeedID: FeedProof]?, keys: FeedKeys, vouched: Set<FeedID>,
        points: inout [FeedID: [UInt64: SignedHead]]
    ) throws -> IngestReport {
        let byFeed = Self.positionsByFeed(batch)
        let tail = try syncPending()
        var report = IngestReport()
        let heldClock = try storedClock()
        var clock = heldClock
        var inserted: [InsertedEvent] = []
        inserted.reserveCapacity(batch.count)
        let wallMs = options.wallClock()
        let arrivalMs = try arrivalTime(wallMs: wallMs)
        for (feed, positions) in byFeed {
            let run = FeedRun(feed: feed, positions: positions, wallMs: wallMs, arrivalMs: arrivalMs)
            if let proofs {
                try ingestSigned(
                    run, of: batch, proof: proofs[feed], keys: keys.keys(for: feed),
                    validBeforeMs: keys.validBeforeMs[feed.origin], clock: &clock,
                    inserted: &inserted, report: &report, in: tail)
            } else {
                let signs = feed.origin == replicaID || vouched.contains(feed)
                // A feed this replica signs needs no other's points.
                var feedPoints = signs ? [:] : points.removeValue(forKey: feed) ?? [:]
                try ingestFeed(
                    run, of: batch, signs: signs, points: &feedPoints, clock: &clock, inserted: &inserted,
                    report: &report, in: tail)
                if !feedPoints.isEmpty { points[feed] = feedPoints }
            }
        }
        // A batch of events already held writes nothing, so its commit costs no fsync.
        if clock != heldClock { try storeClock(clock) }
        try foldInserted(inserted, batchSize: batch.count, in: tail)
        report.stored = inserted.map(\.stored)
        return report
    }

    /// One feed's part of an ingest.
    struct FeedRun {
        let feed: FeedID
        /// Where its events are in the batch, in seq order.
        let positions: [Int]
        let wallMs: Int64
        let arrivalMs: Int64
    }

    /// The batch's positions per feed, feeds in order, each feed's positions
    /// in seq order. (Grouping positions, not events, copies no event; a
    /// batch names a few feeds, so they are looked up by a linear scan.)
    private static func positionsByFeed(_ batch: [Event]) -> [(feed: FeedID, positions: [Int])] {
        var groups: [(feed: FeedID, positions: [Int])] = []
        var lookup: [FeedID: Int] = [:]
        for index in batch.indices {
            let feed = batch[index].feed
            let group: Int
            if groups.count <= 8, let found = groups.firstIndex(where: { $0.feed == feed }) {
                group = found
            } else if groups.count > 8, let found = lookup[feed] {
                group = found
            } else {
                group = groups.count
                groups.append((feed, []))
                if groups.count == 9 {
                    for (position, existing) in groups.enumerated() { lookup[existing.feed] = position }
                } else if groups.count > 9 {
                    lookup[feed] = group
                }
            }
            groups[group].positions.append(index)
        }
        for group in groups.indices
        where !zip(groups[group].positions, groups[group].positions.dropFirst())
            .allSatisfy({ batch[$0].seq < batch[$1].seq })
        {
            groups[group].positions.sort { batch[$0].seq < batch[$1].seq }
        }
        return groups.sorted { $0.feed < $1.feed }
    }

    /// Stores the events of one feed unverified, at `run.positions` of `batch`
    /// in seq order; `signs`: this replica signs the feed's points and head
    /// as it stores them (its own feed, or one it vouches for). Each of
    /// `points` whose link the stored chain reaches is kept there and taken out.
    private func ingestFeed(
        _ run: FeedRun, of batch: [Event], signs: Bool, points: inout [UInt64: SignedHead],
        clock: inout HybridClock, inserted: inout [InsertedEvent], report: inout IngestReport, in tail: SyncedTail
    ) throws {
        let (feed, positions, wallMs, arrivalMs) = (run.feed, run.positions, run.wallMs, run.arrivalMs)
        var feedRow = try feedRowID(feed, create: false)
        if let feedRow, try isForked(feedRow: feedRow) {
            report.refusedForked[feed, default: 0] += positions.count
            return
        }
        let startHead = try feedRow.map { try headSeq(feedRow: $0) } ?? 0
        var head = startHead
        var link: [UInt8]?
        // A long run of a feed is stored as block rows (docs/storage.md "Block rows").
        // A mirror stores rows: its offsets, pinned, need not be consecutive.
        let inBlocks = positions.count >= EventLog.blockMinimumEvents && !feed.isThinClient && pinnedSlots == nil
        var block: BlockBuilder?
        var pointAtHead: SignedHead?
        for (index, position) in positions.enumerated() {
            let offered = batch[position]
            if offered.seq >= 1, offered.seq <= head {
                let held = try feedRow.flatMap { try eventID(feedRow: $0, seq: offered.seq) }
                if held == offered.eventID {
                    report.duplicates += 1
                } else if let held {
                    report.forks.append(
                        Fork(feed: feed, seq: offered.seq, heldEventID: held, offeredEventID: offered.eventID))
                    try quarantine(offered, reason: "fork", held: held, wallMs: wallMs)
                }
                continue
            }
            guard offered.seq == head + 1 || offered.seq == 0 else {
                report.gaps.append(
                    FeedGap(
                        feed: feed, expectedSeq: head + 1, offeredSeq: offered.seq,
                        rejectedCount: positions.count - index))
                break
            }
            let event: Event
            switch Self.checked(offered) {
            case .success(let canonical):
                event = canonical
            case .failure(let reason):
                report.invalid.append(InvalidEvent(feed: feed, seq: offered.seq, reason: reason.description))
                try quarantine(offered, reason: "invalid: \(reason)", held: nil, wallMs: wallMs)
                if index + 1 < positions.count {
                    report.gaps.append(
                        FeedGap(
                            feed: feed, expectedSeq: offered.seq, offeredSeq: batch[positions[index + 1]].seq,
                            rejectedCount: positions.count - index - 1))
                }
                return try finish(
                    feedRow, head, startHead, link: link, block: &block, signing: signs ? feed : nil,
                    signed: pointAtHead?.seq == head ? pointAtHead : nil)
            }
            let row = try feedRow ?? feedRowID(feed, create: true)!
            feedRow = row
            if link == nil { link = try headLink(feed: feed, feedRow: row, head: head) }
            link = FeedChain.link(after: link!, event)
            if event.seq % EventLog.signedPointInterval == 0, signs,
                let signed = sign(feed, seq: event.seq, link: link!)
            {
                try keepSignedPoint(signed, feedRow: row)
            } else if let point = points[event.seq], point.link == link! {
                points[event.seq] = nil
                try keepSignedPoint(point, feedRow: row)
                pointAtHead = point
            }
            if inBlocks && block == nil { block = BlockBuilder(feedRow: row, arrivalMs: arrivalMs) }
            let entityRow = try entityRowID(EntityKey(type: event.entityType, id: event.entityID), create: true)!
            inserted.append(
                try storeEvent(
                    event, feedRow: row, entityRow: entityRow, arrivalMs: arrivalMs, into: &block, in: tail))
            if block?.count == EventLog.blockMaximumEvents { try writeBlock(&block!) }
            head = event.seq
            let ahead = clock.observe(remoteMs: event.timeMs, wallMs: wallMs)
            if ahead > 0 { report.clockSkewMs[feed.replicaID] = max(report.clockSkewMs[feed.replicaID] ?? 0, ahead) }
        }
        try finish(
            feedRow, head, startHead, link: link, block: &block, signing: signs ? feed : nil,
            signed: pointAtHead?.seq == head ? pointAtHead : nil)
    }

    /// Writes the block still collecting, if any, and the feed's new head
    /// with its signature: `signed`, or this replica's own when `signing`
    /// names the feed (an import of its own events, whose origin it is, or
    /// of a feed it vouches for).
    func finish(
        _ feedRow: Int64?, _ head: UInt64, _ startHead: UInt64, link: [UInt8]?, block: inout BlockBuilder?,
        signing feed: FeedID? = nil, signed: SignedHead? = nil
    ) throws {
        if block != nil { try writeBlock(&block!) }
        guard let feedRow, let link, head != startHead else { return }
        let own = feed.flatMap { sign($0, seq: head, link: link) }
        try setHead(head, link: link, feedRow: feedRow, signed: own ?? signed)
    }

    /// The event with its payload in canonical form, or why it cannot be stored.
    ///
    /// Payloads are re-encoded canonically (keys sorted, no whitespace) so that
    /// every replica stores and exports the same text, whatever a peer sent.
    static func checked(_ event: Event) -> Result<Event, InvalidReason> {
        if event.seq == 0 { return .failure("seq must be 1 or more") }
        if event.seq > UInt64(Int64.max) { return .failure("seq is too large") }
        if event.feed.replicaID.isEmpty || event.feed.scope.isEmpty {
            return .failure("replica_id and scope must not be empty")
        }
        if FeedID.isReserved(replicaID: event.feed.replicaID) {
            return .failure(
                InvalidReason(stringLiteral: "replica_id \(event.feed.replicaID) is reserved for the protocol"))
        }
        if event.entityType.isEmpty || event.entityID.isEmpty {
            return .failure("entity_type and entity_id must not be empty")
        }
        // A payload a peer stored is already canonical: then there is nothing to re-encode.
        if CanonicalForm.isCanonicalObject(event.payload) { return .success(event) }
        guard let payload = try? JSONValue.parse(event.payload), case .object = payload else {
            return .failure("payload is not a JSON object")
        }
        var canonical = event
        canonical.payload = payload.canonicalText
        return .success(canonical)
    }

    /// The event as an ingest stores it (its payload in canonical form), or
    /// nil when the ingest would refuse it: what a chain over events about
    /// to be ingested must hash.
    public static func canonical(_ event: Event) -> Event? {
        try? checked(event).get()
    }

    /// Why an offered event breaks the event model.
    struct InvalidReason: Error, ExpressibleByStringLiteral, CustomStringConvertible {
        let description: String
        init(stringLiteral value: String) { description = value }
    }

    func quarantine(_ event: Event, reason: String, held: UUID?, wallMs: Int64) throws {
        try db.cached(
            """
            INSERT OR IGNORE INTO quarantine
                (reason, replica_id, scope, seq, event_id, held_event_id, event_json, detected_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run([
            .text(reason), .text(event.feed.replicaID), .text(event.feed.scope),
            .int(Int64(min(event.seq, UInt64(Int64.max)))),
            .text(event.eventID.lowercased), held.map { .text($0.lowercased) } ?? .null,
            .text(EventJSON.line(for: event, offset: nil, arrivalTimeMs: nil)), .int(wallMs),
        ])
    }
}
