/// When `tick` next has work, answered without a pass over every
/// connection: a relay with 1,000 replicas hears a message on some
/// connection for every event each replica acknowledges, and the shell asks
/// for the deadline after each. The passes run once per input that can move
/// a deadline (a connection up, identified or gone, an address learned, a
/// dial failed, a tick), and on `heard` only for the connection that was
/// next to go silent: hearing any other one moves no minimum.
extension PeerManager {
    /// The deadlines that take a pass over the connections and addresses.
    struct DeadlineCache: Sendable, Hashable {
        /// The open connection silent the longest, and when it counts as silent.
        var silentID: ConnectionID?
        var silentAt: Milliseconds?
        /// The next dial of a waiting address, or the next rotation.
        var dialAt: Milliseconds?
    }

    /// When `tick` next has something to do (close a silent connection,
    /// dial an address whose time came, rotate, fall back to the mesh), or
    /// `nil` when only a new input can change anything. The shell sleeps
    /// until then.
    public var nextDeadline: Milliseconds? {
        var deadline: Milliseconds?
        func consider(_ time: Milliseconds?) {
            guard let time else { return }
            deadline = min(deadline ?? time, time)
        }
        if case .relayLost(_, let fallbackAt) = hubState { consider(fallbackAt) }
        consider(deadlines.silentAt)
        consider(deadlines.dialAt)
        return deadline
    }

    /// Recomputes the cached deadlines from every connection and address.
    mutating func refreshDeadlines() {
        var silent: Connection?
        for connection in connections.values where !connection.closing {
            if let first = silent, (first.lastHeardAt, first.id) <= (connection.lastHeardAt, connection.id) {
                continue
            }
            silent = connection
        }
        deadlines.silentID = silent?.id
        deadlines.silentAt = silent.map { $0.lastHeardAt + configuration.deadAfterMs + 1 }
        deadlines.dialAt = nextDialOrRotation()
    }

    private func nextDialOrRotation() -> Milliseconds? {
        let candidates = targets.values.filter { $0.state == .waiting && isDialable($0) }
        guard !candidates.isEmpty else { return nil }
        let connectedReplicas = Set(connections.values.compactMap(\.replicaID))
        let earliestDial = candidates.filter { !($0.replicaID.map(connectedReplicas.contains) ?? false) }
            .map(\.nextDialAt).min()
        guard let earliestDial else { return nil }
        let outbound =
            connections.values.filter { $0.dialed != nil }.count + targets.values.filter { $0.state == .dialing }.count
        if outbound < configuration.maxOutbound && connections.count < configuration.maxConnections {
            return earliestDial
        }
        if let rotateEvery = configuration.rotateEveryMs, outbound >= configuration.maxOutbound,
            connections.values.contains(where: { $0.dialed != nil && !$0.closing })
        {
            return max(earliestDial, lastRotationAt + rotateEvery)
        }
        return nil
    }
}
