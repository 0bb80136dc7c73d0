/// The hub topology: while it holds, a replica dials relays only and closes
/// its outbound connections to other peers, so that n replicas keep n
/// connections instead of n(n−1)/2. Accepted connections stay: a peer that
/// dials us still runs the mesh (it reaches no relay), and cutting it off
/// would leave it alone. Relays dial relays and accept everyone, so several
/// relays sync with each other like peers.
///
/// In `TopologyMode.auto` a replica starts in the mesh, turns to the hub
/// when a relay's hello arrives, and falls back to the mesh
/// `relayFallbackMs` after its last relay connection closed, unless a relay
/// is back by then (`HubState`).
extension PeerManager {
    /// Mesh or hub, now.
    public var topology: Topology { hubState.topology }

    /// Whether `tick` may dial the target in the current topology: in the
    /// hub only relays, and configured addresses whose role is not known
    /// yet (`--peer relay.site:4100` tells no role until its hello).
    func isDialable(_ target: Target) -> Bool {
        switch topology {
        case .mesh: true
        case .hub: target.role == .relay || (target.role == nil && target.source == .configured)
        }
    }

    /// A relay's hello arrived: an `auto` replica turns to the hub (again).
    mutating func relayIdentified() {
        guard role == .peer, configuration.topology == .auto else { return }
        hubState = .hub
    }

    /// A relay connection is gone: when it was the last, an `auto` replica
    /// waits `relayFallbackMs` for a relay before it falls back.
    mutating func relayDisconnected(now: Milliseconds) {
        guard role == .peer, configuration.topology == .auto, hubState == .hub,
            !connections.values.contains(where: { $0.role == .relay && !$0.closing })
        else { return }
        hubState = .relayLost(since: now, fallbackAt: now + configuration.relayFallbackMs)
    }

    /// No relay came back in time: the mesh again, whose addresses the next
    /// dials of `tick` reach.
    mutating func fallBackIfDue(now: Milliseconds) {
        guard case .relayLost(_, let fallbackAt) = hubState, now >= fallbackAt else { return }
        hubState = .mesh
    }

    /// In the hub, closes every identified outbound connection to a peer
    /// that is not a relay.
    mutating func closeOutsideHub() -> [Directive] {
        guard topology == .hub else { return [] }
        var directives: [Directive] = []
        for connection in connections.values.sorted(by: { $0.id < $1.id })
        where connection.dialed != nil && connection.replicaID != nil && connection.role != .relay
            && !connection.closing
        {
            connections[connection.id]?.closing = true
            directives.append(.close(connection.id, reason: "hub topology: only relays are dialed"))
        }
        return directives
    }
}
