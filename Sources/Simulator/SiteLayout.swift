import Gossip
import SyncProtocol

/// Replicas grouped in sites: each site has its own relay or relay pair
/// and its replicas on one fast LAN, and the sites reach each other over
/// slow WAN links (`Scenario.sites`).
///
/// Node indices put the relays first, as `Scenario.relayCount` wants them:
/// relay `r` belongs to site `r / relaysPerSite`; then the replicas, site
/// by site. A replica knows its own site's relays and replicas, with their
/// roles (as mDNS on its LAN tells them); a relay knows its site's nodes
/// and every other site's relays, as static peers of unknown role (`--peer
/// relay.site:4100`, docs/topology.md "A relay across subnets").
///
/// ```swift
/// var scenario = Scenario(seed: 1, sites: SiteLayout(sites: 3, replicasPerSite: 20, relaysPerSite: 2))
/// scenario.appendCount = 200
/// let report = try Simulation(scenario: scenario).run()
/// ```
public struct SiteLayout: Sendable, Hashable {
    public var siteCount: Int
    public var replicasPerSite: Int
    /// 1 (one relay per site) or 2 (a relay pair).
    public var relaysPerSite: Int
    /// One-way latency of a link between two nodes of one site.
    public var lanLatencyMs: ClosedRange<Milliseconds> = 1...5
    /// One-way latency of a link between nodes of two sites.
    public var wanLatencyMs: ClosedRange<Milliseconds> = 50...200
    /// What one direction of a WAN link carries per second: messages queue
    /// behind each other (`nil`: no limit). Needs `Scenario.countsBytes`.
    public var wanBytesPerSecond: Int? = 1_250_000

    public init(sites: Int, replicasPerSite: Int, relaysPerSite: Int) {
        precondition(sites >= 1 && replicasPerSite >= 1 && relaysPerSite >= 1, "a site needs a relay and a replica")
        siteCount = sites
        self.replicasPerSite = replicasPerSite
        self.relaysPerSite = relaysPerSite
    }

    /// Relays of every site, the first node indices.
    public var relayCount: Int { siteCount * relaysPerSite }
    /// Relays and replicas of every site.
    public var nodeCount: Int { siteCount * (relaysPerSite + replicasPerSite) }

    /// The site node `index` belongs to.
    public func site(of index: Int) -> Int {
        index < relayCount ? index / relaysPerSite : (index - relayCount) / replicasPerSite
    }

    /// The relays of one site.
    public func relays(of site: Int) -> Range<Int> {
        (site * relaysPerSite)..<((site + 1) * relaysPerSite)
    }

    /// The replicas (not relays) of one site.
    public func replicas(of site: Int) -> Range<Int> {
        let first = relayCount + site * replicasPerSite
        return first..<(first + replicasPerSite)
    }

    /// Whether a link between two nodes crosses the WAN.
    public func isWAN(_ a: Int, _ b: Int) -> Bool { site(of: a) != site(of: b) }

    /// The partition groups that cut one site off from the others: its
    /// nodes in group 1, everyone else in group 0.
    public func isolating(_ site: Int) -> [Int] {
        (0..<nodeCount).map { self.site(of: $0) == site ? 1 : 0 }
    }

    /// The addresses node `index` knows at its start, with the role it
    /// knows for each (`nil`: a static peer whose hello will say).
    func knownPeers(of index: Int) -> [(index: Int, role: NodeRole?)] {
        let home = site(of: index)
        let local =
            relays(of: home).map { (index: $0, role: NodeRole?.some(.relay)) }
            + replicas(of: home).map { (index: $0, role: NodeRole?.some(.peer)) }
        var known = local.filter { $0.index != index }
        if index < relayCount {
            known += (0..<relayCount).filter { site(of: $0) != home }.map { (index: $0, role: NodeRole?.none) }
        }
        return known
    }
}
