import Gossip
import SyncProtocol

/// Counters of one run (or, summed, of a sweep), so that a test can prove
/// the faults happened and the workload did what it says.
public struct SimulationStatistics: Sendable, Hashable {
    public var network = NetworkStatistics()
    public var appends = 0
    public var undos = 0
    public var refusedUndos = 0
    public var deletes = 0
    /// Steps that edited one item on several replicas at the same instant.
    public var concurrentEdits = 0
    /// Claims that appended a `Claimed`, and of those and the requests the
    /// takeovers (of an item another replica held, as the claimant saw it).
    public var claims = 0
    public var takeovers = 0
    /// Claims that appended a `ClaimRequested` (the replica reached a relay).
    public var claimRequests = 0
    /// Answers the relays appended (a `ClaimGranted` or `ClaimRefused`);
    /// relays cut off from each other may both answer one request.
    public var answersGiven = 0
    /// At the end, as replica 0 holds them: requests granted, refused naming
    /// a holder, refused as expired, and not answered; and the grants that
    /// did not stand (another relay's grant took the item first).
    public var grants = 0
    public var refusals = 0
    public var expiredRequests = 0
    public var unansweredRequests = 0
    public var overruledGrants = 0
    /// Releases by the holder, and forced ones for another holder.
    public var releases = 0
    public var forcedReleases = 0
    /// Appends, undos, claims and releases the log refused because another
    /// writer held the entity (or, for a release, no one or another did).
    public var refusedBySessions = 0
    /// Events in the items' dropped tails at the end (as replica 0 holds them).
    public var droppedEvents = 0
    public var partitions = 0
    public var crashes = 0
    public var restarts = 0
    public var dials = 0
    public var dialFailures = 0
    /// "fork quarantined" lines the nodes logged.
    public var forkReports = 0
    /// Messages sent before the initial events were appended.
    public var messagesBeforeInitialEvents = 0
    /// Bytes sent before then (with `Scenario.countsBytes`).
    public var bytesBeforeInitialEvents = 0
    /// What the links within a site and between sites had carried then
    /// (`Scenario.sites`).
    public var lanBeforeInitialEvents = LinkTraffic()
    public var wanBeforeInitialEvents = LinkTraffic()
    /// Events every node had received from peers then (`eventsReceived`).
    public var eventsReceivedBeforeInitialEvents = 0
    /// Identified connections when the initial events were appended.
    public var connectionsAtInitialEvents = 0
    /// "clock far ahead" lines: events from a clock past the tolerated skew.
    public var clockFarAheadReports = 0
    public var warnings = 0
    /// Events the nodes received in batches from their peers, and of those
    /// the ones they stored (the rest they held already), over every
    /// incarnation of every node.
    public var eventsReceived = 0
    public var eventsStored = 0
    /// `prune` and `graft` messages sent (link pruning).
    public var prunes = 0
    public var grafts = 0
    /// `eventsReceived` and `eventsStored` of the running nodes when the
    /// last event wave began (`Scenario.laterEventWavesAtMs`), to count
    /// that wave alone.
    public var eventsReceivedBeforeLastWave = 0
    public var eventsStoredBeforeLastWave = 0

    public init() {}

    /// Keeps the counters of a node that is about to end (a crash), so
    /// that `eventsReceived` and `eventsStored` count every incarnation.
    mutating func countEnded(_ node: SyncNode) {
        eventsReceived += node.statistics.eventsReceived
        eventsStored += node.statistics.eventsStored
    }

    /// Batches' events received per event stored from a peer: 1 when no
    /// event reached a node twice.
    public var receptionsPerStoredEvent: Double {
        eventsStored == 0 ? 0 : Double(eventsReceived) / Double(eventsStored)
    }

    /// The same for the last event wave alone.
    public var receptionsPerStoredEventInLastWave: Double {
        let stored = eventsStored - eventsStoredBeforeLastWave
        return stored == 0 ? 0 : Double(eventsReceived - eventsReceivedBeforeLastWave) / Double(stored)
    }

    /// Adds another run's counters to these.
    public mutating func add(_ other: SimulationStatistics) {
        network.messagesSent += other.network.messagesSent
        network.messagesDelivered += other.network.messagesDelivered
        network.drops += other.network.drops
        network.partitionDrops += other.network.partitionDrops
        network.duplicates += other.network.duplicates
        network.delays += other.network.delays
        network.channelBreaks += other.network.channelBreaks
        network.resets += other.network.resets
        network.connectionsOpened += other.network.connectionsOpened
        network.closes += other.network.closes
        network.bytesSent += other.network.bytesSent
        network.lan.add(other.network.lan)
        network.wan.add(other.network.wan)
        appends += other.appends
        undos += other.undos
        refusedUndos += other.refusedUndos
        deletes += other.deletes
        concurrentEdits += other.concurrentEdits
        claims += other.claims
        takeovers += other.takeovers
        claimRequests += other.claimRequests
        answersGiven += other.answersGiven
        grants += other.grants
        refusals += other.refusals
        expiredRequests += other.expiredRequests
        unansweredRequests += other.unansweredRequests
        overruledGrants += other.overruledGrants
        releases += other.releases
        forcedReleases += other.forcedReleases
        refusedBySessions += other.refusedBySessions
        droppedEvents += other.droppedEvents
        partitions += other.partitions
        crashes += other.crashes
        restarts += other.restarts
        dials += other.dials
        dialFailures += other.dialFailures
        forkReports += other.forkReports
        messagesBeforeInitialEvents += other.messagesBeforeInitialEvents
        bytesBeforeInitialEvents += other.bytesBeforeInitialEvents
        connectionsAtInitialEvents += other.connectionsAtInitialEvents
        clockFarAheadReports += other.clockFarAheadReports
        warnings += other.warnings
        eventsReceived += other.eventsReceived
        eventsStored += other.eventsStored
        prunes += other.prunes
        grafts += other.grafts
    }

    /// One line for a test log or the end of a sweep.
    public var summary: String {
        let n = network
        return "messages \(n.messagesSent) sent / \(n.messagesDelivered) delivered, drops \(n.drops), "
            + "partition drops \(n.partitionDrops), duplicates \(n.duplicates), delays \(n.delays), "
            + "channel breaks \(n.channelBreaks), resets \(n.resets), connections \(n.connectionsOpened), "
            + "dials \(dials) (\(dialFailures) failed), partitions \(partitions), crashes \(crashes), "
            + "restarts \(restarts), appends \(appends) (undos \(undos), refused \(refusedUndos), "
            + "deletes \(deletes), concurrent steps \(concurrentEdits)), claims \(claims) (takeovers \(takeovers)), "
            + "releases \(releases) (forced \(forcedReleases)), refused by sessions \(refusedBySessions), "
            + "dropped \(droppedEvents), clock far ahead \(clockFarAheadReports)" + grantSummary
    }

    /// The relay mode's figures, when any claim went through a relay.
    private var grantSummary: String {
        guard claimRequests > 0 else { return "" }
        return ", requests \(claimRequests) (granted \(grants), overruled \(overruledGrants), refused \(refusals), "
            + "expired \(expiredRequests), unanswered \(unansweredRequests); answers given \(answersGiven))"
    }
}

/// The outcome of one run.
public struct SimulationReport: Sendable {
    public var scenario: Scenario
    /// Virtual time at which every replica held every acknowledged event
    /// with equal state hashes; nil when that never happened.
    public var convergedAtMs: Milliseconds?
    public var statistics: SimulationStatistics
    /// The state hash of replica 0 at the end.
    public var stateHash: String?
    /// How deep the spread went, when the scenario tracks hops.
    public var hops: HopSummary?
    /// What went wrong; empty when the run passed every check.
    public var failures: [String]
    /// The last log lines, for a failure's diagnostic.
    public var recentLog: String
    /// What the checkpoint steps did, in a run of `Scenario.checkpoints`.
    public var checkpoints: CheckpointFigures? = nil

    public var passed: Bool { failures.isEmpty }

    /// Everything needed to understand and replay a failed seed.
    public var failureMessage: String {
        """
        simulation failed: \(scenario.summary)
        \(failures.joined(separator: "\n"))
        statistics: \(statistics.summary)
        last log lines:
        \(recentLog)
        replay: \(scenario.replayCommand)
        """
    }
}
