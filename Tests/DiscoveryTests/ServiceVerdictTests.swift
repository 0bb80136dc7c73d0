import PeerNet
import Testing

@testable import Discovery

@Suite struct ServiceVerdictTests {
    let own = MDNSAdvertisement(replicaID: "own", port: 4100, clusterFingerprint: "c0ffee00", protocolVersion: 1)

    func judge(_ txt: [String], port: UInt16 = 4200) -> ServiceVerdict {
        ServiceVerdict.judge(serviceName: "peerd-other", host: "10.77.0.12", port: port, txt: ServiceTXT(txt), own: own)
    }

    @Test func aServiceOfThisClusterAndVersionIsAPeerAtItsAddress() {
        #expect(
            judge(["id=other", "v=1", "role=relay", "cluster=c0ffee00"])
                == .peer(
                    DiscoveredPeer(
                        serviceName: "peerd-other", replicaID: "other",
                        address: PeerAddress(host: "10.77.0.12", port: 4200), role: .relay, protocolVersion: 1)))
    }

    @Test func thisReplicasOwnIdIsIgnoredWhateverElseTheRecordSays() {
        #expect(judge(["id=own", "v=1", "role=peer", "cluster=c0ffee00"]) == .ownService)
        #expect(judge(["id=own", "v=9", "cluster=elsewhere"]) == .ownService)
    }

    @Test func anotherClustersFingerprintIsIgnored() {
        #expect(judge(["id=other", "v=1", "role=peer", "cluster=deadbeef"]) == .otherCluster(fingerprint: "deadbeef"))
        #expect(judge(["id=other", "v=1", "role=peer"]) == .otherCluster(fingerprint: ""))
    }

    @Test func anotherProtocolVersionIsIgnored() {
        #expect(judge(["id=other", "v=2", "role=peer", "cluster=c0ffee00"]) == .incompatibleVersion("2"))
        #expect(judge(["id=other", "v=one", "role=peer", "cluster=c0ffee00"]) == .incompatibleVersion("one"))
        #expect(judge(["id=other", "role=peer", "cluster=c0ffee00"]) == .incompatibleVersion(""))
    }

    @Test func aServiceWithoutAnIdIsNotAPeer() {
        #expect(judge(["v=1", "role=peer", "cluster=c0ffee00"]) == .malformed(reason: "no TXT id"))
        #expect(judge(["id=", "v=1", "role=peer", "cluster=c0ffee00"]) == .malformed(reason: "no TXT id"))
    }

    @Test func anUnknownRoleOrPortZeroIsNotAPeer() {
        #expect(
            judge(["id=other", "v=1", "role=gateway", "cluster=c0ffee00"])
                == .malformed(reason: "unknown role 'gateway'"))
        #expect(judge(["id=other", "v=1", "role=peer", "cluster=c0ffee00"], port: 0) == .malformed(reason: "port 0"))
    }
}
