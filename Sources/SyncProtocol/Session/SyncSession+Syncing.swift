import Replica

extension SyncSession {
    /// What a session knows only while the two sides sync: what the peer
    /// holds, what has been sent and acknowledged, and the state summaries.
    struct Syncing: Sendable {
        let peer: Hello
        let localReplicaID: String
        /// What the peer holds, as far as we know.
        var peerHeads = VectorCursor()
        /// Highest seq sent per feed (never below `peerHeads`).
        var sentHeads = VectorCursor()
        /// Where we last rewound a feed to the peer's report, so a feed the
        /// peer cannot take (a quarantined event) is re-sent once, not every round.
        var rewoundAt: [FeedID: UInt64] = [:]
        /// Without live push: our cursor when the peer's last cursor arrived,
        /// the most a round may send.
        var roundLimit = VectorCursor()
        /// Our cursor when the peer's previous cursor arrived: the most a
        /// pruned origin may send. One report behind, so that an event still
        /// on its way to the peer over another link (a few ms) is not sent
        /// again: only what the peer still lacks a round later goes.
        var lazyLimit = VectorCursor()
        /// Origins the peer pruned: their events go only up to `lazyLimit`.
        var prunedByPeer: Set<String> = []
        /// Origins we asked the peer to prune, with the round (`rounds`) we did.
        var prunedByUs: [String: UInt64] = [:]
        /// Our anti-entropy rounds (cursor messages sent) on this session.
        var rounds: UInt64 = 0
        /// Origins we grafted since they were last pruned for a duplicate:
        /// their own link failed to bring them, so a connected origin does
        /// not prune them here.
        var grafted: Set<String> = []
        /// Per batch sent and not acknowledged yet: the highest seq it carries per feed.
        var inFlight: [UInt64: VectorCursor] = [:]
        /// Feeds whose run the peer acknowledged without taking it (it could
        /// not verify it: no key for the origin, no signature where the run
        /// ended). They go again once something that may let it take them
        /// changes (`retryDeclined`): our head of the feed moves, or
        /// certificates cross the connection. Never every round.
        var declined: Set<FeedID> = []
        var readPending = false
        /// Our cursor when the pending read was asked for: a feed that grew
        /// since then is read again rather than held back (below).
        var cursorAtRead = VectorCursor()
        /// Counts the times declined feeds were given another chance (our
        /// head moved, certificates crossed); with its value when the
        /// pending read was asked for, a chance that came while the read was
        /// out makes an unprovable run of it be read again, not held back.
        var retries = 0
        var retriesAtRead = 0
        /// A page read while the window was full, to go as the next batch
        /// the moment an ack opens it (so the link does not wait for a read).
        var heldPage: EventPage?
        var unacknowledged = 0
        var nextBatchID: UInt64 = 1
        var receivedBatchIDs: UInt64 = 0
        /// Our state summary as last sent.
        var sentState: StateReport?
        /// The peer's latest `state` messages, newest last, each with the
        /// cursor it describes; and our own latest summaries, so that two
        /// hashed at one cursor are compared whichever arrived first.
        var peerStates: [StateReport] = []
        var localStates: [StateReport] = []
        /// How many of each are kept.
        static let statesKept = 4
        /// The peer's latest `state` and the cursor it describes.
        var peerState: StateReport? { peerStates.last }
        /// The peer's cursor as its cursor messages alone said it (not
        /// raised by acks or by what we sent): what its `state` describes.
        var peerAdvertised = VectorCursor()
        /// The last time the two states were compared at one cursor.
        var stateCheck: StateCheck?

        init(peer: Hello, localReplicaID: String) {
            self.peer = peer
            self.localReplicaID = localReplicaID
        }

        /// The peer sent its cursor (all of it first, then what changed).
        mutating func peerReported(
            _ heads: VectorCursor, localCursor: VectorCursor, configuration: Configuration
        ) -> [Directive] {
            lazyLimit = roundLimit
            roundLimit = localCursor
            for (feed, head) in heads.heads {
                peerAdvertised[feed] = head
                peerHeads[feed] = head
                if head > sentHeads[feed] {
                    sentHeads[feed] = head
                } else if head < sentHeads[feed], unacknowledged == 0, heldPage == nil, rewoundAt[feed] != head {
                    // Sent and acknowledged, yet not held: send again, once per position.
                    rewoundAt[feed] = head
                    sentHeads[feed] = head
                }
            }
            return pump(localCursor: localCursor, configuration: configuration)
        }

        /// A batch arrived: the peer holds what it sends, so never send it back.
        mutating func received(_ batch: EventBatch) {
            receivedBatchIDs = batch.batchID
            raisePeerHeads(batch.heads)
        }

        /// The peer acknowledged batch `batchID` with its heads of the
        /// batch's feeds: a feed it did not take up to the batch's end is
        /// declined until `retryDeclined` sends it again.
        mutating func acknowledged(_ batchID: UInt64, heads: VectorCursor) {
            raisePeerHeads(heads)
            guard let sent = inFlight.removeValue(forKey: batchID) else { return }
            for (feed, end) in sent.heads {
                if peerHeads[feed] >= end { declined.remove(feed) } else { declined.insert(feed) }
            }
        }

        /// Declined feeds among `feeds` go again from what the peer holds.
        mutating func retryDeclined(_ feeds: some Sequence<FeedID>) {
            retries += 1
            for feed in feeds where declined.remove(feed) != nil && sentHeads[feed] > peerHeads[feed] {
                sentHeads[feed] = peerHeads[feed]
            }
        }

        mutating func raisePeerHeads(_ heads: VectorCursor) {
            for (feed, head) in heads.heads where head > peerHeads[feed] {
                peerHeads[feed] = head
                if head > sentHeads[feed] { sentHeads[feed] = head }
            }
        }

        /// The page read for the peer: each feed's run in it that continues
        /// what was sent and reaches past it goes out as the next batch,
        /// whole, since its proof covers it from its first event.
        mutating func eventsRead(
            _ page: EventPage, localCursor: VectorCursor, configuration: Configuration
        ) -> [Directive] {
            readPending = false
            var runs: [FeedID: ClosedRange<UInt64>] = [:]
            for event in page.events {
                let run = runs[event.feed]
                runs[event.feed] =
                    min(run?.lowerBound ?? event.seq, event.seq)...max(run?.upperBound ?? event.seq, event.seq)
            }
            var fresh: Set<FeedID> = []
            for (feed, run) in runs where run.upperBound > sentHeads[feed] && run.lowerBound <= sentHeads[feed] + 1 {
                if configuration.sendsOnlyProvenRuns && page.proofs[feed]?.head.signature == nil {
                    // No signature covers it yet. If the feed grew while the page was read (an import
                    // committing its last batch, which brings the signed head), or certificates crossed
                    // meanwhile (an import's last transaction brings them with the signatures), it is
                    // read again; otherwise it is held back, as if the peer declined it, until our head
                    // moves or certificates cross.
                    if localCursor[feed] <= cursorAtRead[feed] && retries == retriesAtRead {
                        sentHeads[feed] = run.upperBound
                        declined.insert(feed)
                    }
                    continue
                }
                sentHeads[feed] = run.upperBound
                fresh.insert(feed)
            }
            guard !fresh.isEmpty else { return pump(localCursor: localCursor, configuration: configuration) }
            heldPage =
                fresh.count == runs.count
                ? page
                : EventPage(
                    events: page.events.filter { fresh.contains($0.feed) },
                    proofs: page.proofs.filter { fresh.contains($0.key) })
            return sendHeldPage(configuration: configuration)
                + pump(localCursor: localCursor, configuration: configuration)
        }

        /// The page read ahead goes as the next batch, if the window has room.
        mutating func sendHeldPage(configuration: Configuration) -> [Directive] {
            guard let page = heldPage else { return [] }
            let room =
                page.events.count <= configuration.liveBatchEvents
                ? configuration.window + configuration.liveOverWindow : configuration.window
            guard unacknowledged < room else { return [] }
            heldPage = nil
            let batch = EventBatch(batchID: nextBatchID, events: page.events, proofs: page.proofs)
            inFlight[batch.batchID] = batch.heads
            nextBatchID += 1
            unacknowledged += 1
            return [.send(.events(batch))]
        }

        /// Asks for the next batch when the peer lacks something and the
        /// window has room, or is full with no page read ahead yet (that
        /// one waits in `heldPage` for the next ack).
        mutating func pump(localCursor: VectorCursor, configuration: Configuration) -> [Directive] {
            guard !readPending, heldPage == nil, unacknowledged <= configuration.window + configuration.liveOverWindow
            else { return [] }
            var ranges: [FeedRange] = []
            for (feed, head) in localCursor.heads {
                let limit =
                    if !configuration.livePush {
                        min(head, roundLimit[feed])
                    } else if isPruned(feed) {
                        min(head, lazyLimit[feed])
                    } else {
                        head
                    }
                let sent = sentHeads[feed]
                // Below our checkpoint's floor the events are gone here.
                guard sent >= configuration.historyFloor[feed] else { continue }
                if limit > sent { ranges.append(FeedRange(feed: feed, seqs: (sent + 1)...limit)) }
            }
            guard !ranges.isEmpty else { return [] }
            ranges.sort { $0.feed < $1.feed }
            readPending = true
            cursorAtRead = localCursor
            retriesAtRead = retries
            return [
                .readEvents(ranges: ranges, maxEvents: configuration.batchEvents, maxBytes: configuration.batchBytes)
            ]
        }

        /// Whether the peer pruned the origin of `feed` (never our own feeds).
        func isPruned(_ feed: FeedID) -> Bool {
            guard !prunedByPeer.isEmpty else { return false }
            let origin = feed.origin
            return origin != localReplicaID && prunedByPeer.contains(origin)
        }

        /// After a batch from the peer was ingested: prune the origins it
        /// forwarded that brought nothing new, and once it forwards at all
        /// every origin connected to us (not grafted here); graft the pruned
        /// ones that brought new events. The peer's own feeds are never pruned.
        mutating func linkSignals(
            batchFeeds: [FeedID], newEvents: [FeedID: Int], directOrigins: Set<String>
        ) -> [Directive] {
            var fresh: Set<String> = []
            var stale: Set<String> = []
            for feed in batchFeeds {
                let origin = feed.origin
                guard origin != peer.replicaID else { continue }
                if newEvents[feed, default: 0] > 0 { fresh.insert(origin) } else { stale.insert(origin) }
            }
            // New events of a pruned origin graft it once two of our rounds
            // have passed since the prune: before that they may be eager
            // pushes the peer sent before our prune reached it.
            var directives = graft(fresh.filter { prunedByUs[$0].map { rounds >= $0 + 2 } ?? false })
            let duplicated = stale.subtracting(fresh)
            grafted.subtract(duplicated)
            var prune = duplicated
            if !fresh.isEmpty || !stale.isEmpty {
                // The peer forwards: whatever it would forward of a connected
                // origin, that origin's own push brings as well.
                prune.formUnion(directOrigins.subtracting([peer.replicaID, localReplicaID]).subtracting(grafted))
            }
            prune = prune.filter { prunedByUs[$0] == nil }
            for origin in prune { prunedByUs[origin] = rounds }
            if !prune.isEmpty { directives.append(.send(.prune(origins: prune.sorted()))) }
            return directives
        }

        /// Makes pruned origins eager again on this link: their own link
        /// failed to bring their events, so a connected origin does not
        /// prune them here; only a batch of duplicates does.
        mutating func graft(_ origins: Set<String>) -> [Directive] {
            guard !origins.isEmpty else { return [] }
            for origin in origins { prunedByUs[origin] = nil }
            grafted.formUnion(origins)
            return [.send(.graft(origins: origins.sorted()))]
        }

        /// Our state summary, when the peer has not had it and our cursor
        /// messages so far report exactly the cursor it describes.
        mutating func stateIfDue(_ localState: StateReport?, advertised: VectorCursor) -> [Directive] {
            guard let localState, localState != sentState, localState.cursor == advertised else { return [] }
            sentState = localState
            return [.send(.state(localState.summary))]
        }

        /// Keeps the peer's `report` (or our own) and compares the two sides
        /// at the newest cursor both have described.
        mutating func noteState(_ report: StateReport, local: Bool) {
            if local {
                guard localStates.last != report else { return }
                localStates = Array((localStates + [report]).suffix(Self.statesKept))
            } else {
                peerStates = Array((peerStates + [report]).suffix(Self.statesKept))
            }
            compareStates()
        }

        /// A check at a cursor older than the last one's is not made: it
        /// would say less.
        private mutating func compareStates() {
            for peer in peerStates.reversed() {
                guard let local = localStates.last(where: { $0.cursor == peer.cursor }) else { continue }
                if let check = stateCheck, check.cursor.eventCount > local.cursor.eventCount { return }
                stateCheck = StateCheck(cursor: local.cursor, matched: local.summary.hash == peer.summary.hash)
                return
            }
        }
    }
}
