import Foundation

extension EventLog {
    /// Checks the database on demand: SQLite's `PRAGMA integrity_check`,
    /// then the log's own invariants, all in one read transaction:
    ///
    /// - every feed holds a gap-free prefix 1…n of its seqs, and its
    ///   `head_seq` (the cursor entry) is n; within a feed, local offsets
    ///   increase with seq;
    /// - no event id is stored twice;
    /// - `meta` holds the replica id, and `projected_offset` does not pass
    ///   the newest event's offset;
    /// - with `refold`, every projection of a folded type (pending ones
    ///   included) equals a fresh fold of its entity's events, found by
    ///   walking the entity's chain, which must reach all of them.
    ///
    /// It only reads, so it is safe beside a running daemon (best on a log
    /// opened with `Options.readOnly`). A read that fails on a damaged or
    /// unreadable file becomes a finding, and the other checks still run.
    ///
    /// ```swift
    /// var options = EventLog.Options()
    /// options.readOnly = true
    /// let report = try EventLog.open(at: "/var/lib/peerd/replica.db", options: options).checkIntegrity()
    /// for finding in report.findings { print(finding) }  // gap: feed 3f…/default: seq 7 is missing (…)
    /// ```
    public func checkIntegrity(refold: Bool = false) throws -> IntegrityReport {
        try read {
            var check = IntegrityCheck(log: self)
            check.guarded("integrity_check") { try $0.runIntegrityCheck() }
            check.guarded("reading meta") { try $0.checkMeta() }
            check.guarded("reading the feeds") { try $0.checkFeeds() }
            check.guarded("looking for repeated event ids") { try $0.checkEventIDs() }
            if refold { check.guarded("refolding the projections") { try $0.checkProjections() } }
            return try check.finished()
        }
    }
}

/// One `checkIntegrity` run, inside its read transaction.
private struct IntegrityCheck {
    typealias Finding = IntegrityReport.Finding

    let log: EventLog
    var report: IntegrityReport
    /// A failure that is not a storage fault (a bug, a busy database): the check stops and throws it.
    var failure: Error?

    init(log: EventLog) {
        self.log = log
        report = IntegrityReport(path: log.path)
    }

    private var db: SQLiteConnection { log.db }

    /// Runs one check; a storage fault in it becomes a finding.
    mutating func guarded(_ name: String, _ body: (inout IntegrityCheck) throws -> Void) {
        guard failure == nil else { return }
        do {
            try body(&self)
        } catch {
            let wrapped = EventLogError.wrapping(error, path: log.path)
            guard let fault = (wrapped as? EventLogError)?.storageFault else {
                failure = wrapped
                return
            }
            report.findings.append(
                Finding(fault.kind == .damaged ? .damaged : .unreadable, "\(name) failed: \(fault.detail)"))
        }
    }

    func finished() throws -> IntegrityReport {
        if let failure { throw failure }
        return report
    }

    mutating func runIntegrityCheck() throws {
        let statement = try db.cached("PRAGMA integrity_check")
        // Recorded row by row: on some damage SQLite reports a few rows, then fails the step.
        while try statement.step() {
            let message = statement.text(0)
            report.integrityCheck.append(message)
            guard message != "ok" else { continue }
            // A row may start with a "*** in database main ***" header line.
            for line in message.split(separator: "\n") where !line.hasPrefix("*** in database") {
                report.findings.append(Finding(.damaged, "integrity_check: \(line)"))
            }
        }
    }

    mutating func checkMeta() throws {
        if try EventLog.readMeta(db, "replica_id") == nil {
            report.findings.append(Finding(.meta, "meta has no replica_id"))
        }
        let newest = try log.newestOffset()
        guard let text = try EventLog.readMeta(db, "projected_offset") else {
            report.findings.append(Finding(.meta, "meta has no projected_offset"))
            return
        }
        guard let projected = Int64(text), projected >= 0 else {
            report.findings.append(Finding(.meta, "meta.projected_offset is \"\(text)\", not an offset"))
            return
        }
        if projected > newest {
            report.findings.append(
                Finding(
                    .meta,
                    "meta.projected_offset is \(projected), past the newest event (offset \(newest)): the "
                        + "projection rows claim events the log does not hold"))
        }
    }

    /// One pass over the `(feed, seq)` index and the blocks: gaps, heads, the order of offsets.
    mutating func checkFeeds() throws {
        var feeds: [Int64: (feed: FeedID, head: Int64)] = [:]
        let feedRows = try db.cached("SELECT id, replica_id, scope, head_seq FROM feeds")
        while try feedRows.step() {
            feeds[feedRows.int64(0)] = (FeedID(replicaID: feedRows.text(1), scope: feedRows.text(2)), feedRows.int64(3))
        }
        // A log that started from a checkpoint holds no event it covers.
        try log.refreshCoveredEvents()
        let floor = try log.checkpoint()?.floorCursor ?? VectorCursor()
        func start(_ feed: FeedID?) -> Int64 {
            guard let feed else { return 0 }
            return Int64(floor[feed])
        }
        var walked: Set<Int64> = []
        var walk: (row: Int64, feed: FeedWalk)?
        var slots = try FeedSlots(db)
        while let slot = try slots.next() {
            let row = slot.feed
            if walk?.row != row {
                if let (done, feed) = walk { report.findings += feed.finished(head: feeds[done]?.head) }
                walked.insert(row)
                report.feedCount += 1
                if feeds[row] == nil {
                    report.findings.append(
                        Finding(
                            .unknownFeed,
                            "the event at offset \(slot.offset) names feed row \(row), which is not in feeds"))
                }
                walk = (
                    row,
                    FeedWalk(
                        feed: feeds[row]?.feed ?? FeedID(replicaID: "(feed row \(row))"), after: start(feeds[row]?.feed)
                    )
                )
            }
            report.eventCount += 1
            walk?.feed.take(seq: slot.seq, offset: slot.offset)
        }
        report.findings += slots.findings
        if let (done, feed) = walk { report.findings += feed.finished(head: feeds[done]?.head) }
        for (row, entry) in feeds.sorted(by: { $0.key < $1.key })
        where entry.head != start(entry.feed) && !walked.contains(row) {
            report.findings.append(
                Finding(
                    .gap,
                    "feed \(entry.feed): seqs 1…\(entry.head) are missing (head_seq is \(entry.head), no event is stored)",
                    feed: entry.feed, seq: 1))
        }
    }

    /// Event ids stored more than once, each with every place it is stored;
    /// copies that are all in thin-client feeds are the documented case.
    mutating func checkEventIDs() throws {
        let places = try blockCount() == 0 ? try repeatedRowIDs() : try repeatedIDs()
        var start = 0
        while start < places.count {
            var end = start + 1
            while end < places.count, places[end].id == places[start].id { end += 1 }
            let group = places[start..<end]
            start = end
            // One thin client's event pushed through two relays sits in both their feeds (docs/relay.md).
            if group.allSatisfy({ $0.feed.isThinClient }) { continue }
            let id = UUID(bytes: group.first!.id)?.lowercased ?? group.first!.id.map { String($0, radix: 16) }.joined()
            let stored = group.map { "offset \($0.offset) (feed \($0.feed) seq \($0.seq))" }.joined(separator: ", ")
            report.findings.append(
                Finding(
                    .duplicateEventID, "event \(id) is stored \(group.count) times: \(stored)", feed: group.first!.feed,
                    seq: group.first!.seq))
        }
    }

    private func blockCount() throws -> Int64 { try db.scalarInt("SELECT count(*) FROM event_blocks") ?? 0 }

    /// Every place of an event id stored more than once in rows, by id then offset.
    private func repeatedRowIDs() throws -> [(id: [UInt8], offset: Int64, feed: FeedID, seq: UInt64)] {
        let statement = try db.cached(
            """
            SELECT e.event_id, e.local_offset, f.replica_id, f.scope, e.seq
            FROM events e LEFT JOIN feeds f ON f.id = e.feed
            WHERE e.event_id IN (SELECT event_id FROM events GROUP BY event_id HAVING count(*) > 1)
            ORDER BY e.event_id, e.local_offset
            """)
        var places: [(id: [UInt8], offset: Int64, feed: FeedID, seq: UInt64)] = []
        while try statement.step() {
            places.append(
                (
                    statement.blob(0), statement.int64(1),
                    FeedID(replicaID: statement.text(2), scope: statement.text(3)), UInt64(max(0, statement.int64(4)))
                ))
        }
        return places
    }

    /// As `repeatedRowIDs`, over rows and blocks: every id is read into
    /// memory and sorted (40 bytes an event), since SQL cannot group the
    /// ids inside blocks.
    private func repeatedIDs() throws -> [(id: [UInt8], offset: Int64, feed: FeedID, seq: UInt64)] {
        var all: [(id: UUID, offset: Int64, feedRow: Int64, seq: Int64)] = []
        let rows = try db.cached("SELECT event_id, local_offset, feed, seq FROM events")
        while try rows.step() {
            guard let id = rows.uuid(0) else { continue }
            all.append((id, rows.int64(1), rows.int64(2), rows.int64(3)))
        }
        let blocks = try db.cached(
            "SELECT first_offset, feed, first_seq, events FROM event_blocks ORDER BY first_offset")
        while try blocks.step() {
            for (index, entry) in (EventBlock.entries(of: blocks.text(3)) ?? []).enumerated() {
                all.append(
                    (entry.eventID, blocks.int64(0) + Int64(index), blocks.int64(1), blocks.int64(2) + Int64(index)))
            }
        }
        // By id in byte order (as SQL orders the blobs), then offset; the ids compared as two words.
        func words(_ id: UUID) -> (UInt64, UInt64) {
            withUnsafeBytes(of: id.uuid) {
                (
                    UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                )
            }
        }
        all.sort {
            let (left, right) = (words($0.id), words($1.id))
            return left != right ? left < right : $0.offset < $1.offset
        }
        var feeds: [Int64: FeedID] = [:]
        let feedRows = try db.cached("SELECT id, replica_id, scope FROM feeds")
        while try feedRows.step() {
            feeds[feedRows.int64(0)] = FeedID(replicaID: feedRows.text(1), scope: feedRows.text(2))
        }
        var places: [(id: [UInt8], offset: Int64, feed: FeedID, seq: UInt64)] = []
        var start = 0
        while start < all.count {
            var end = start + 1
            while end < all.count, all[end].id == all[start].id { end += 1 }
            if end - start > 1 {
                for place in all[start..<end] {
                    places.append(
                        (
                            place.id.orderedBytes, place.offset, feeds[place.feedRow] ?? FeedID(replicaID: ""),
                            UInt64(max(0, place.seq))
                        ))
                }
            }
            start = end
        }
        return places
    }

    /// Every projection of a folded type against a fresh fold of its chain.
    mutating func checkProjections() throws {
        let current = try log.syncedProjections()
        // A chain link must point back; one that does not could make the walk loop.
        let forward = try db.cached(
            "SELECT local_offset, entity_prev FROM events WHERE entity_prev >= local_offset ORDER BY local_offset LIMIT 10"
        )
        var unsafe = false
        while try forward.step() {
            unsafe = true
            report.findings.append(
                Finding(
                    .chain,
                    "the event at offset \(forward.int64(0)) names \(forward.int64(1)) as its entity's previous event, "
                        + "which is not earlier; projections were not refolded"))
        }
        var stored: [Int64: Int] = [:]
        let blocks = try db.cached("SELECT first_offset, events FROM event_blocks ORDER BY first_offset")
        while try blocks.step() {
            guard let entries = EventBlock.entries(of: blocks.text(1)) else { continue }  // FeedSlots reports it
            for (index, entry) in entries.enumerated() {
                let offset = blocks.int64(0) + Int64(index)
                stored[entry.entityRow, default: 0] += 1
                if let previous = entry.entityPrev, previous >= offset {
                    unsafe = true
                    report.findings.append(
                        Finding(
                            .chain,
                            "the event at offset \(offset) names \(previous) as its entity's previous event, "
                                + "which is not earlier; projections were not refolded"))
                }
            }
        }
        guard !unsafe else { return }
        let counts = try db.cached("SELECT entity, count(*) FROM events GROUP BY entity")
        while try counts.step() { stored[counts.int64(0), default: 0] += Int(counts.int64(1)) }

        var refolded = 0
        let entities = try db.cached("SELECT id, entity_type, entity_id, state, last_offset FROM entities ORDER BY id")
        while try entities.step() {
            let row = entities.int64(0)
            let type = entities.text(1)
            guard let domain = log.domains[type] else { continue }
            let id = entities.text(2)
            let held: String?
            if var pending = current.states[row] {
                held = pending.hasState ? pending.encoded() : nil
            } else {
                held = entities.isNull(3) ? nil : entities.text(3)
            }
            let head = current.heads[row] ?? (entities.isNull(4) ? nil : entities.int64(4))
            let count = stored[row] ?? 0
            let base = try log.checkpointBase(entityRow: row)
            func finding(_ kind: Finding.Kind, _ detail: String) -> Finding {
                Finding(kind, "\(type)/\(id): \(detail)", entityType: type, entityID: id)
            }
            guard let head else {
                if count > 0 {
                    report.findings.append(finding(.chain, "\(count) events are stored but none is its chain's head"))
                }
                if held != base?.state {
                    report.findings.append(
                        finding(.projection, "it has no events, and its projection is not its checkpoint base"))
                }
                continue
            }
            let chain = try log.entityChain(head: head)
            if chain.first?.stored.offset != head {
                report.findings.append(
                    finding(.chain, "its chain head, offset \(head), is not one of its stored events"))
            } else if chain.count != count || chain.contains(where: { $0.entityRow != row }) {
                report.findings.append(
                    finding(.chain, "its chain from offset \(head) reaches \(chain.count) events, \(count) are stored"))
            }
            // A fresh fold of what the checkpoint does not cover, on its base.
            let history = chain.map(\.stored.event).filter { !log.covered.covers($0) }
                .sorted { $0.orderKey < $1.orderKey }
            let fresh = EventLog.base(entityType: type, entityID: id, domain: domain, start: base, afterIt: history)?
                .state
            if held != fresh {
                report.findings.append(
                    finding(
                        .projection,
                        "the projection is \(held.map { String($0.prefix(160)) } ?? "missing"), a fresh fold of its "
                            + "\(history.count) events gives \(fresh.map { String($0.prefix(160)) } ?? "none")"))
            }
            refolded += 1
        }
        report.refolded = refolded
    }
}

/// Every stored event's feed row, seq and offset, in `(feed, seq)` order:
/// the rows by the `(feed, seq)` index merged with the blocks, whose slots
/// follow from their columns alone.
private struct FeedSlots {
    typealias Finding = IntegrityReport.Finding

    struct Slot {
        var feed: Int64
        var seq: Int64
        var offset: Int64
    }

    private let rows: SQLiteStatement
    private let blocks: SQLiteStatement
    private var nextRow: Slot?
    /// The block being walked: its feed, the next seq and offset, the last seq.
    private var block: (feed: Int64, seq: Int64, offset: Int64, lastSeq: Int64)?
    /// Blocks whose columns disagree (a seq span unlike the offset span), or
    /// whose text does not read as that many events.
    private(set) var findings: [Finding] = []

    init(_ db: SQLiteConnection) throws {
        rows = try db.cached("SELECT feed, seq, local_offset FROM events ORDER BY feed, seq")
        blocks = try db.cached(
            """
            SELECT feed, first_seq, last_seq, first_offset, last_offset, events
            FROM event_blocks ORDER BY feed, first_seq
            """)
        try stepRow()
        try stepBlock()
    }

    mutating func next() throws -> Slot? {
        let fromBlock = block.map { candidate in
            nextRow.map { (candidate.feed, candidate.seq) < ($0.feed, $0.seq) } ?? true
        }
        switch fromBlock {
        case true?:
            let current = block!
            if current.seq == current.lastSeq {
                try stepBlock()
            } else {
                block = (current.feed, current.seq + 1, current.offset + 1, current.lastSeq)
            }
            return Slot(feed: current.feed, seq: current.seq, offset: current.offset)
        case false?, nil:
            guard let row = nextRow else { return nil }
            try stepRow()
            return row
        }
    }

    private mutating func stepRow() throws {
        nextRow = try rows.step() ? Slot(feed: rows.int64(0), seq: rows.int64(1), offset: rows.int64(2)) : nil
    }

    private mutating func stepBlock() throws {
        block = nil
        while try blocks.step() {
            let (feed, firstSeq, lastSeq) = (blocks.int64(0), blocks.int64(1), blocks.int64(2))
            let (firstOffset, lastOffset) = (blocks.int64(3), blocks.int64(4))
            let entries = EventBlock.entries(of: blocks.text(5))
            guard lastSeq >= firstSeq, lastSeq - firstSeq == lastOffset - firstOffset,
                Int64(entries?.count ?? -1) == lastOffset - firstOffset + 1
            else {
                findings.append(
                    Finding(
                        .damaged,
                        "the block at offset \(firstOffset) (feed row \(feed), seqs \(firstSeq)…\(lastSeq), offsets "
                            + "\(firstOffset)…\(lastOffset)) is not a readable run of events"))
                continue
            }
            block = (feed, firstSeq, firstOffset, lastSeq)
            return
        }
    }
}
