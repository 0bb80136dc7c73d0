import Replica

/// The sync protocol between this replica and one connected peer, as a pure
/// state machine: inputs in, directives out. The shell reads and ingests
/// events, sends messages and drives the anti-entropy timer.
///
/// ```swift
/// var session = SyncSession(hello: mine, configuration: .init())
/// run(session.start(localCursor: try log.cursor()))
/// run(session.receive(message))          // for each message from the peer
/// run(session.localCursorChanged(c))     // after any append or ingest
/// run(session.eventsRead(page))          // answering .readEvents
/// run(session.ingested(batchID: 7, cursor: try log.cursor()))  // answering .ingest
/// run(session.tick())                    // every anti-entropy interval
/// session.localStateComputed(report)      // after hashing the log; sent with the next cursor
/// ```
///
/// What the peer lacks is known from cursors: its reported heads, raised by
/// every ack and by every batch it sends us (it holds what it sends). Events
/// go per feed in seq order, in batches bounded by count and bytes, with at
/// most `window` batches unacknowledged so that the receiver's memory stays
/// bounded.
public struct SyncSession: Sendable {
    public struct Configuration: Sendable {
        /// Most events in one batch.
        public var batchEvents = 5_000
        /// Most bytes (about) in one batch.
        public var batchBytes = 2 << 20
        /// Most batches sent and not yet acknowledged.
        public var window = 4
        /// Push new events as they appear; when off, the peer gets only what
        /// we held when its last cursor arrived (pure anti-entropy: one hop
        /// per round).
        public var livePush = true

        public init() {}
    }

    /// What the shell does for the session.
    public enum Directive: Hashable, Sendable {
        case send(Message)
        /// Read up to `maxEvents` / about `maxBytes` of events of these
        /// ranges, feed by feed in seq order, and answer with `eventsRead`.
        case readEvents(ranges: [FeedRange], maxEvents: Int, maxBytes: Int)
        /// Ingest the batch in one transaction and answer with `ingested`.
        case ingest(EventBatch)
        /// The peer said who it is.
        case identified(Hello)
        /// The peer told us where other replicas are.
        case learned([PeerAdvert])
        /// End the connection; the reason is for the log.
        case close(reason: String)
    }

    enum State: Sendable {
        case idle
        case awaitingHello
        case awaitingCursor(peer: Hello)
        case syncing(peer: Hello)
        case closed(reason: String)
    }

    public let configuration: Configuration
    private let hello: Hello
    private var state = State.idle
    private var localCursor = VectorCursor()
    /// Our cursor as last sent, to send only what changed.
    private var advertised = VectorCursor()
    /// What the peer holds, as far as we know.
    private var peerHeads = VectorCursor()
    /// Highest seq sent per feed (never below `peerHeads`).
    private var sentHeads = VectorCursor()
    /// Where we last rewound a feed to the peer's report, so a feed the peer
    /// cannot take (a quarantined event) is re-sent once, not every round.
    private var rewoundAt: [FeedID: UInt64] = [:]
    /// Without live push: our cursor when the peer's last cursor arrived,
    /// the most a round may send.
    private var roundLimit = VectorCursor()
    private var readPending = false
    private var unacknowledged = 0
    private var nextBatchID: UInt64 = 1
    private var receivedBatchIDs: UInt64 = 0
    /// Our latest state summary and the one last sent.
    private var localState: StateReport?
    private var sentState: StateReport?
    /// The peer's latest `state` message and the cursor it describes.
    public private(set) var peerState: StateReport?

    public init(hello: Hello, configuration: Configuration = Configuration()) {
        self.hello = hello
        self.configuration = configuration
    }

    /// The peer, once its hello arrived.
    public var peer: Hello? {
        switch state {
        case .awaitingCursor(let peer), .syncing(let peer): peer
        case .idle, .awaitingHello, .closed: nil
        }
    }

    /// True once the peer's first cursor arrived (and until the session closes).
    public var isSyncing: Bool {
        if case .syncing = state { return true }
        return false
    }

    /// How many events the peer holds that we lack, and the reverse, from
    /// cursors alone.
    public var progress: (toReceive: UInt64, toSend: UInt64) {
        (localCursor.missingCount(from: peerHeads), peerHeads.missingCount(from: localCursor))
    }

    /// True when the peer's last reported state describes the cursor we now
    /// know it holds (no ack, batch or cursor has moved it since).
    public var peerStateIsCurrent: Bool { peerState.map { $0.cursor == peerHeads } ?? false }

    /// Opens the session: our hello and our whole cursor.
    public mutating func start(localCursor: VectorCursor) -> [Directive] {
        guard case .idle = state else { return fail("start in state \(state)") }
        self.localCursor = localCursor
        advertised = localCursor
        state = .awaitingHello
        return [.send(.hello(hello)), .send(.cursor(localCursor))]
    }

    public mutating func receive(_ message: Message) -> [Directive] {
        switch (state, message) {
        case (.closed, _):
            return []
        case (_, .goodbye(let reason)):
            state = .closed(reason: "peer said goodbye: \(reason)")
            return [.close(reason: "peer said goodbye: \(reason)")]
        case (.awaitingHello, .hello(let peer)):
            guard peer.replicaID != hello.replicaID else { return fail("connected to itself") }
            guard peer.protocolVersion == hello.protocolVersion else {
                return fail(
                    "incompatible protocol version \(peer.protocolVersion) in the peer's hello; "
                        + "this node speaks \(hello.protocolVersion)")
            }
            state = .awaitingCursor(peer: peer)
            return [.identified(peer)]
        case (.awaitingCursor(let peer), .cursor(let heads)):
            state = .syncing(peer: peer)
            return stateIfDue() + peerReported(heads)
        case (.syncing, .cursor(let heads)):
            return peerReported(heads)
        case (.awaitingCursor, .peers(let adverts)), (.syncing, .peers(let adverts)):
            return [.learned(adverts)]
        case (.syncing, .events(let batch)):
            guard batch.batchID == receivedBatchIDs + 1 else {
                return fail("batch \(batch.batchID) out of order, expected \(receivedBatchIDs + 1)")
            }
            receivedBatchIDs = batch.batchID
            // The peer holds what it sends: never send it back.
            for (feed, head) in batch.heads.heads where head > peerHeads[feed] {
                peerHeads[feed] = head
                if head > sentHeads[feed] { sentHeads[feed] = head }
            }
            return [.ingest(batch)]
        case (.syncing, .state(let summary)):
            // The sender's cursor messages so far describe what it held.
            peerState = StateReport(summary: summary, cursor: peerHeads)
            return []
        case (.syncing, .ack(let batchID, let heads)):
            guard batchID < nextBatchID, unacknowledged > 0 else { return fail("ack for unsent batch \(batchID)") }
            unacknowledged -= 1
            raisePeerHeads(heads)
            return pump()
        default:
            return fail("unexpected \(message.name) in state \(state)")
        }
    }

    /// Our log changed (a local append, or events from any peer).
    public mutating func localCursorChanged(_ cursor: VectorCursor) -> [Directive] {
        localCursor = cursor
        guard configuration.livePush else { return [] }
        return pump()
    }

    /// The shell read the events a `.readEvents` asked for.
    public mutating func eventsRead(_ events: [Event]) -> [Directive] {
        guard case .syncing = state, readPending else { return [] }
        readPending = false
        var fresh: [Event] = []
        for event in events where event.seq > sentHeads[event.feed] {
            guard event.seq == sentHeads[event.feed] + 1 else { break }
            sentHeads[event.feed] = event.seq
            fresh.append(event)
        }
        guard !fresh.isEmpty else { return pump() }
        let batch = EventBatch(batchID: nextBatchID, events: fresh)
        nextBatchID += 1
        unacknowledged += 1
        return [.send(.events(batch))] + pump()
    }

    /// The shell ingested a batch the peer sent; `cursor` is ours after it.
    public mutating func ingested(batchID: UInt64, cursor: VectorCursor, batchFeeds: [FeedID]) -> [Directive] {
        guard case .syncing = state else { return [] }
        var heads = VectorCursor()
        for feed in batchFeeds { heads[feed] = cursor[feed] }
        var directives: [Directive] = [.send(.ack(batchID: batchID, heads: heads))]
        directives += localCursorChanged(cursor)
        return directives
    }

    /// The anti-entropy timer: say what changed in our cursor since we last
    /// said it (an empty cursor message when nothing did), then our state
    /// summary if it is new and describes that cursor.
    public mutating func tick() -> [Directive] {
        guard case .syncing = state else { return [] }
        var changed = VectorCursor()
        for (feed, head) in localCursor.heads where head != advertised[feed] { changed[feed] = head }
        advertised = localCursor
        return [.send(.cursor(changed))] + stateIfDue()
    }

    /// The shell hashed the log: `report` goes to the peer right after the
    /// next cursor message that reports `report.cursor`, once.
    public mutating func localStateComputed(_ report: StateReport) {
        localState = report
    }

    /// Our state summary, when the peer has not had it and our cursor
    /// messages so far report exactly the cursor it describes.
    private mutating func stateIfDue() -> [Directive] {
        guard let localState, localState != sentState, localState.cursor == advertised else { return [] }
        sentState = localState
        return [.send(.state(localState.summary))]
    }

    /// Ends the session from our side.
    public mutating func close(reason: String) -> [Directive] {
        if case .closed = state { return [] }
        state = .closed(reason: reason)
        return [.send(.goodbye(reason: reason)), .close(reason: reason)]
    }

    private mutating func peerReported(_ heads: VectorCursor) -> [Directive] {
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
        return pump()
    }

    private mutating func raisePeerHeads(_ heads: VectorCursor) {
        for (feed, head) in heads.heads where head > peerHeads[feed] {
            peerHeads[feed] = head
            if head > sentHeads[feed] { sentHeads[feed] = head }
        }
    }

    /// Asks for the next batch when the window allows and the peer lacks something.
    private mutating func pump() -> [Directive] {
        guard case .syncing = state, !readPending, unacknowledged < configuration.window else { return [] }
        var ranges: [FeedRange] = []
        for (feed, head) in localCursor.heads {
            let limit = configuration.livePush ? head : min(head, roundLimit[feed])
            let sent = sentHeads[feed]
            if limit > sent { ranges.append(FeedRange(feed: feed, seqs: (sent + 1)...limit)) }
        }
        guard !ranges.isEmpty else { return [] }
        ranges.sort { $0.feed < $1.feed }
        readPending = true
        return [.readEvents(ranges: ranges, maxEvents: configuration.batchEvents, maxBytes: configuration.batchBytes)]
    }

    private mutating func fail(_ reason: String) -> [Directive] {
        state = .closed(reason: reason)
        return [.send(.goodbye(reason: reason)), .close(reason: reason)]
    }
}

/// Consecutive events of one feed.
public struct FeedRange: Hashable, Sendable {
    public var feed: FeedID
    public var seqs: ClosedRange<UInt64>

    public init(feed: FeedID, seqs: ClosedRange<UInt64>) {
        self.feed = feed
        self.seqs = seqs
    }
}
