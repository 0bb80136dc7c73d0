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
        let newest = try db.scalarInt("SELECT max(local_offset) FROM events") ?? 0
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

    /// One pass over the `(feed, seq)` index: gaps, heads, the order of offsets.
    mutating func checkFeeds() throws {
        var feeds: [Int64: (feed: FeedID, head: Int64)] = [:]
        let feedRows = try db.cached("SELECT id, replica_id, scope, head_seq FROM feeds")
        while try feedRows.step() {
            feeds[feedRows.int64(0)] = (FeedID(replicaID: feedRows.text(1), scope: feedRows.text(2)), feedRows.int64(3))
        }
        var walked: Set<Int64> = []
        var walk: (row: Int64, feed: FeedWalk)?
        let events = try db.cached("SELECT feed, seq, local_offset FROM events ORDER BY feed, seq")
        while try events.step() {
            let row = events.int64(0)
            if walk?.row != row {
                if let (done, feed) = walk { report.findings += feed.finished(head: feeds[done]?.head) }
                walked.insert(row)
                report.feedCount += 1
                if feeds[row] == nil {
                    report.findings.append(
                        Finding(
                            .unknownFeed,
                            "the event at offset \(events.int64(2)) names feed row \(row), which is not in feeds"))
                }
                walk = (row, FeedWalk(feed: feeds[row]?.feed ?? FeedID(replicaID: "(feed row \(row))")))
            }
            report.eventCount += 1
            walk?.feed.take(seq: events.int64(1), offset: events.int64(2))
        }
        if let (done, feed) = walk { report.findings += feed.finished(head: feeds[done]?.head) }
        for (row, entry) in feeds.sorted(by: { $0.key < $1.key }) where entry.head != 0 && !walked.contains(row) {
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

    /// Every projection of a folded type against a fresh fold of its chain.
    mutating func checkProjections() throws {
        let current = try log.syncPending()
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
        guard !unsafe else { return }
        var stored: [Int64: Int] = [:]
        let counts = try db.cached("SELECT entity, count(*) FROM events GROUP BY entity")
        while try counts.step() { stored[counts.int64(0)] = Int(counts.int64(1)) }

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
            func finding(_ kind: Finding.Kind, _ detail: String) -> Finding {
                Finding(kind, "\(type)/\(id): \(detail)", entityType: type, entityID: id)
            }
            guard let head else {
                if count > 0 {
                    report.findings.append(finding(.chain, "\(count) events are stored but none is its chain's head"))
                }
                if held != nil {
                    report.findings.append(finding(.projection, "it has a projection but its chain is empty"))
                }
                continue
            }
            let chain = try log.storedEventsWithEntity("", [.int(head)], select: EventLog.entityChainSelect)
            if chain.first?.stored.offset != head {
                report.findings.append(
                    finding(.chain, "its chain head, offset \(head), is not one of its stored events"))
            } else if chain.count != count || chain.contains(where: { $0.entityRow != row }) {
                report.findings.append(
                    finding(.chain, "its chain from offset \(head) reaches \(chain.count) events, \(count) are stored"))
            }
            let history = chain.map(\.stored.event).sorted { $0.orderKey < $1.orderKey }
            var poison: [UUID] = []
            let fresh =
                EventLog.hasProjection(history)
                ? domain.encode(
                    domain.apply(
                        Fold.resolve(inCanonicalOrder: history).effective, to: domain.state(entityID: id, from: nil),
                        poison: &poison)) : nil
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
