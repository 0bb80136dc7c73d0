import Replica

extension SyncSession {
    /// What a session knows only while the two sides sync: what the peer
    /// holds, what has been sent and acknowledged, and the state summaries.
    struct Syncing: Sendable {
        let peer: Hello
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
        var readPending = false
        var unacknowledged = 0
        var nextBatchID: UInt64 = 1
        var receivedBatchIDs: UInt64 = 0
        /// Our state summary as last sent.
        var sentState: StateReport?
        /// The peer's latest `state` message and the cursor it describes.
        var peerState: StateReport?

        init(peer: Hello) {
            self.peer = peer
        }

        /// The peer sent its cursor (all of it first, then what changed).
        mutating func peerReported(
            _ heads: VectorCursor, localCursor: VectorCursor, configuration: Configuration
        ) -> [Directive] {
            roundLimit = localCursor
            for (feed, head) in heads.heads {
                peerHeads[feed] = head
                if head > sentHeads[feed] {
                    sentHeads[feed] = head
                } else if head < sentHeads[feed], unacknowledged == 0, rewoundAt[feed] != head {
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

        mutating func raisePeerHeads(_ heads: VectorCursor) {
            for (feed, head) in heads.heads where head > peerHeads[feed] {
                peerHeads[feed] = head
                if head > sentHeads[feed] { sentHeads[feed] = head }
            }
        }

        /// The page read for the peer: what follows the sent heads goes out
        /// as the next batch.
        mutating func eventsRead(
            _ events: [Event], localCursor: VectorCursor, configuration: Configuration
        ) -> [Directive] {
            readPending = false
            var fresh: [Event] = []
            for event in events where event.seq > sentHeads[event.feed] {
                guard event.seq == sentHeads[event.feed] + 1 else { break }
                sentHeads[event.feed] = event.seq
                fresh.append(event)
            }
            guard !fresh.isEmpty else { return pump(localCursor: localCursor, configuration: configuration) }
            let batch = EventBatch(batchID: nextBatchID, events: fresh)
            nextBatchID += 1
            unacknowledged += 1
            return [.send(.events(batch))] + pump(localCursor: localCursor, configuration: configuration)
        }

        /// Asks for the next batch when the window allows and the peer lacks something.
        mutating func pump(localCursor: VectorCursor, configuration: Configuration) -> [Directive] {
            guard !readPending, unacknowledged < configuration.window else { return [] }
            var ranges: [FeedRange] = []
            for (feed, head) in localCursor.heads {
                let limit = configuration.livePush ? head : min(head, roundLimit[feed])
                let sent = sentHeads[feed]
                if limit > sent { ranges.append(FeedRange(feed: feed, seqs: (sent + 1)...limit)) }
            }
            guard !ranges.isEmpty else { return [] }
            ranges.sort { $0.feed < $1.feed }
            readPending = true
            return [
                .readEvents(ranges: ranges, maxEvents: configuration.batchEvents, maxBytes: configuration.batchBytes)
            ]
        }

        /// Our state summary, when the peer has not had it and our cursor
        /// messages so far report exactly the cursor it describes.
        mutating func stateIfDue(_ localState: StateReport?, advertised: VectorCursor) -> [Directive] {
            guard let localState, localState != sentState, localState.cursor == advertised else { return [] }
            sentState = localState
            return [.send(.state(localState.summary))]
        }
    }
}
