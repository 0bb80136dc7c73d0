import Foundation

extension EventLog {
    /// Verifies one feed's run against its proof, then stores what is new
    /// of it (what was written before `validBeforeMs`, when given), or
    /// quarantines the feed when the run proves a fork.
    func ingestSigned(
        _ run: FeedRun, of batch: [Event], proof: FeedProof?, keys: [[UInt8]], validBeforeMs: Int64?,
        clock: inout HybridClock,
        inserted: inout [InsertedEvent], report: inout IngestReport, in tail: SyncedTail
    ) throws {
        let feed = run.feed
        let feedRow = try feedRowID(feed, create: false)
        if let feedRow, try isForked(feedRow: feedRow) {
            report.refusedForked[feed, default: 0] += run.positions.count
            return
        }
        func refuse(_ reason: RefusalReason) {
            report.refused.append(RefusedRun(feed: feed, count: run.positions.count, reason: reason))
        }
        guard let proof else { return refuse(.noProof) }
        guard proof.head.signature != nil else { return refuse(.unsignedHead) }
        guard !keys.isEmpty else { return refuse(.noKey(origin: feed.origin)) }
        let first = batch[run.positions[0]].seq
        guard first >= 1,
            run.positions.enumerated().allSatisfy({ batch[$1].seq == first + UInt64($0) }),
            batch[run.positions.last!].seq == proof.head.seq
        else { return refuse(.notOneRun(headSeq: proof.head.seq)) }
        var events: [Event] = []
        events.reserveCapacity(run.positions.count)
        for position in run.positions {
            switch Self.checked(batch[position]) {
            case .success(let event): events.append(event)
            case .failure(let reason):
                report.invalid.append(InvalidEvent(feed: feed, seq: batch[position].seq, reason: reason.description))
                try quarantine(batch[position], reason: "invalid: \(reason)", held: nil, wallMs: run.wallMs)
                return refuse(.invalidEvent(seq: batch[position].seq, reason: reason.description))
            }
        }
        let head = try feedRow.map { try headSeq(feedRow: $0) } ?? 0
        var link = proof.baseLink
        var theirLinkAtHead: [UInt8]? = head == first - 1 ? link : nil
        // Where a revocation cuts the run: the last event kept and the link there.
        var cut: (seq: UInt64, link: [UInt8])? = validBeforeMs.map { _ in (first - 1, link) }
        for event in events {
            link = FeedChain.link(after: link, event)
            if event.seq == head { theirLinkAtHead = link }
            if let validBeforeMs, event.timeMs < validBeforeMs, cut?.seq == event.seq - 1 { cut = (event.seq, link) }
        }
        guard link == proof.head.link, proof.head.isSigned(byOneOf: keys) else {
            return refuse(.badSignature(origin: feed.origin))
        }
        // Verified. Does it continue what this replica holds?
        if let feedRow, head > 0 {
            let held: SignedHead?
            if let theirs = theirLinkAtHead {
                let ours = try headLink(feed: feed, feedRow: feedRow, head: head)
                held =
                    theirs == ours
                    ? nil
                    : SignedHead(
                        feed: feed, seq: head, link: ours,
                        signature: try signature(feedRow: feedRow, seq: head)?.signature)
            } else if head > proof.head.seq, let ours = try signature(feedRow: feedRow, seq: proof.head.seq),
                ours.link != proof.head.link
            {
                held = SignedHead(feed: feed, seq: proof.head.seq, link: ours.link, signature: ours.signature)
            } else {
                held = nil
            }
            if let held {
                let fork = ForkProof(held: held, other: proof.head, otherBaseLink: proof.baseLink, otherEvents: events)
                try recordFork(fork, feedRow: feedRow)
                report.forkProofs.append(fork)
                return
            }
        }
        guard first <= head + 1 else {
            report.gaps.append(
                FeedGap(feed: feed, expectedSeq: head + 1, offeredSeq: first, rejectedCount: events.count))
            return
        }
        var new = events.drop { $0.seq <= head }
        report.duplicates += events.count - new.count
        var end = (seq: proof.head.seq, link: proof.head.link, signed: true)
        if let cut, cut.seq < proof.head.seq {
            let kept = new.prefix { $0.seq <= cut.seq }
            report.refusedRevoked += new.count - kept.count
            new = kept
            end = (cut.seq, cut.link, false)
        }
        guard !new.isEmpty else { return }
        let row = try feedRow ?? feedRowID(feed, create: true)!
        var block: BlockBuilder? =
            new.count >= EventLog.blockMinimumEvents && !feed.isThinClient
            ? BlockBuilder(feedRow: row, arrivalMs: run.arrivalMs) : nil
        for event in new {
            let entityRow = try entityRowID(EntityKey(type: event.entityType, id: event.entityID), create: true)!
            inserted.append(
                try storeEvent(
                    event, feedRow: row, entityRow: entityRow, arrivalMs: run.arrivalMs, into: &block, in: tail))
            if block?.count == EventLog.blockMaximumEvents { try writeBlock(&block!) }
            let ahead = clock.observe(remoteMs: event.timeMs, wallMs: run.wallMs)
            if ahead > 0 { report.clockSkewMs[feed.replicaID] = max(report.clockSkewMs[feed.replicaID] ?? 0, ahead) }
        }
        try finish(row, end.seq, head, link: end.link, block: &block, signed: end.signed ? proof.head : nil)
        if end.signed { try keepCrossingPoint(proof.head, from: head, feedRow: row) }
    }
}
