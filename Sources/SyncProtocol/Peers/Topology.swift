/// How a node chooses its connections when relays are around
/// (`peerd run --topology`, docs/topology.md).
public enum TopologyMode: String, Hashable, Sendable, CaseIterable {
    /// The hub while a relay is connected, the mesh when every relay is gone.
    case auto
    /// Every peer dials every peer it knows; relays get no special place.
    case mesh
    /// Only relays are dialed, whether or not one is reachable.
    case hub
}

/// The shape a node's connections take now.
public enum Topology: String, Hashable, Sendable {
    /// Every peer it knows is dialed.
    case mesh
    /// Only relays are dialed; outbound connections to other peers are closed.
    case hub
}

/// Where a node stands between the mesh and the hub. A replica in
/// `TopologyMode.auto` moves `mesh` → `hub` when a relay connection is
/// identified, `hub` → `relayLost` when its last relay connection closes,
/// `relayLost` → `hub` when a relay is back in time, and `relayLost` →
/// `mesh` at `fallbackAt`. Relays and the fixed modes stay where they start.
public enum HubState: Hashable, Sendable {
    case mesh
    case hub
    /// No relay is connected since `since`; the node keeps to the hub
    /// until `fallbackAt` in case one comes back.
    case relayLost(since: Milliseconds, fallbackAt: Milliseconds)

    /// The topology this state stands for.
    public var topology: Topology {
        switch self {
        case .mesh: .mesh
        case .hub, .relayLost: .hub
        }
    }
}
