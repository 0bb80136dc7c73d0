import PeerNet
import Testing

@testable import Discovery

@Suite struct ServiceSightingsTests {
    let own = MDNSAdvertisement(replicaID: "own", port: 4100, clusterFingerprint: "c0ffee00", protocolVersion: 1)
    let ipv4 = ServiceSightings.Instance(name: "peerd-b", interface: 2, ipProtocol: 0)
    let ipv6 = ServiceSightings.Instance(name: "peerd-b", interface: 2, ipProtocol: 1)

    func txt(id: String = "b", v: String = "1", role: String = "peer", cluster: String = "c0ffee00") -> [String] {
        ["id=\(id)", "v=\(v)", "role=\(role)", "cluster=\(cluster)"]
    }

    func peer(_ host: String = "10.77.0.12", port: UInt16 = 4200, name: String = "peerd-b") -> DiscoveredPeer {
        DiscoveredPeer(
            serviceName: name, replicaID: "b", address: PeerAddress(host: host, port: port), role: .peer,
            protocolVersion: 1)
    }

    @Test func aResolvedPeerIsFoundOnceThoughSeenOnTwoProtocols() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        sightings.appeared(ipv6)
        #expect(sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt()) == [.found(peer())])
        #expect(sightings.resolved(ipv6, host: "10.77.0.12", port: 4200, txt: txt()).isEmpty)
        #expect(sightings.peers == ["peerd-b": peer()])
    }

    @Test func aPeerIsLostOnlyWhenItsLastInstanceDisappears() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        sightings.appeared(ipv6)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        #expect(sightings.disappeared(ipv6).isEmpty)
        #expect(sightings.disappeared(ipv4) == [.lost(peer())])
        #expect(sightings.peers.isEmpty)
    }

    @Test func aResultForAnInstanceThatAlreadyDisappearedIsDropped() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        #expect(sightings.disappeared(ipv4).isEmpty)
        #expect(sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt()).isEmpty)
        #expect(sightings.peers.isEmpty)
    }

    @Test func aServiceThatMovesIsLostAtTheOldAddressBeforeFoundAtTheNew() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        #expect(
            sightings.resolved(ipv4, host: "10.77.0.13", port: 4200, txt: txt())
                == [.lost(peer()), .found(peer("10.77.0.13"))])
    }

    @Test func aChangedRoleIsFoundAgainWithoutALoss() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        var relay = peer()
        relay.role = .relay
        #expect(sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt(role: "relay")) == [.found(relay)])
    }

    @Test func thisReplicasOwnServiceIsIgnoredSilently() {
        var sightings = ServiceSightings(own: own)
        let mine = ServiceSightings.Instance(name: "peerd-own", interface: 2, ipProtocol: 0)
        sightings.appeared(mine)
        #expect(sightings.resolved(mine, host: "10.77.0.11", port: 4100, txt: txt(id: "own")).isEmpty)
        #expect(sightings.disappeared(mine).isEmpty)
    }

    @Test func anotherClusterIsSaidOnceAsInfoAndNeverFound() {
        var sightings = ServiceSightings(own: own)
        let other = ServiceSightings.Instance(name: "peerd-x", interface: 2, ipProtocol: 0)
        sightings.appeared(ipv4)
        sightings.appeared(other)
        let first = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt(cluster: "deadbeef"))
        #expect(first.count == 1)
        guard case .info(let text) = first.first else {
            Issue.record("expected one info, got \(first)")
            return
        }
        #expect(text.contains("deadbeef") && text.contains("c0ffee00"))
        #expect(
            sightings.resolved(other, host: "10.77.0.14", port: 4200, txt: txt(id: "x", cluster: "deadbeef")).isEmpty)
        #expect(sightings.peers.isEmpty)
    }

    @Test func anotherProtocolVersionIsWarnedAboutOncePerService() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        sightings.appeared(ipv6)
        let first = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt(v: "2"))
        guard case .warning(let text) = first.first, first.count == 1 else {
            Issue.record("expected one warning, got \(first)")
            return
        }
        #expect(text.contains("protocol version '2'"))
        #expect(sightings.resolved(ipv6, host: "10.77.0.12", port: 4200, txt: txt(v: "2")).isEmpty)
    }

    @Test func aPeerThatTurnsIntoAnotherClusterIsLost() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        let events = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt(cluster: "deadbeef"))
        #expect(events.first == .lost(peer()))
        #expect(sightings.peers.isEmpty)
    }

    @Test func afterABrowserRestartPeersNotSeenAgainAreLostWhenItHasReportedAll() {
        var sightings = ServiceSightings(own: own)
        let c = ServiceSightings.Instance(name: "peerd-c", interface: 2, ipProtocol: 0)
        sightings.appeared(ipv4)
        sightings.appeared(c)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        _ = sightings.resolved(c, host: "10.77.0.13", port: 4300, txt: txt(id: "c"))
        sightings.browsingRestarted()
        sightings.appeared(ipv4)  // b is still there; c went away while the daemon was down
        #expect(sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt()).isEmpty)
        let lost = sightings.allForNow()
        #expect(lost.count == 1)
        guard case .lost(let gone) = lost.first else { return }
        #expect(gone.replicaID == "c")
        #expect(sightings.peers.keys.sorted() == ["peerd-b"])
    }

    @Test func allForNowOfTheFirstBrowserLosesNothing() {
        var sightings = ServiceSightings(own: own)
        sightings.appeared(ipv4)
        _ = sightings.resolved(ipv4, host: "10.77.0.12", port: 4200, txt: txt())
        #expect(sightings.allForNow().isEmpty)
    }
}

@Suite struct DiscoveryEventTests {
    let peer = DiscoveredPeer(
        serviceName: "peerd-b #2", replicaID: "b", address: PeerAddress(host: "10.77.0.12", port: 4200), role: .relay,
        protocolVersion: 1)

    @Test func eachEventIsOneLineWithTheNameLast() {
        #expect(
            DiscoveryEvent.found(peer).description == "found id=b addr=10.77.0.12:4200 role=relay v=1 name=peerd-b #2")
        #expect(DiscoveryEvent.lost(peer).description == "lost id=b addr=10.77.0.12:4200 name=peerd-b #2")
        #expect(DiscoveryEvent.warning("mDNS unavailable").description == "warning mDNS unavailable")
        #expect(DiscoveryEvent.info("published").description == "info published")
    }

    @Test func theServiceTypeIsPeersyncOverTCP() {
        #expect(Discovery.serviceType == "_peersync._tcp")
    }
}
