import Foundation
import Gossip
import Testing

@testable import Discovery

@Suite struct AdvertisementTests {
    @Test func theTXTRecordCarriesIdVersionRoleAndClusterInThatOrder() {
        let advertisement = MDNSAdvertisement(
            replicaID: "0f3c9a7e-1b2d-4c5e-8f90-112233445566", port: 4100, clusterFingerprint: "3f09a1c2",
            role: .relay, protocolVersion: 7)
        #expect(
            advertisement.txtRecord == [
                "id=0f3c9a7e-1b2d-4c5e-8f90-112233445566", "v=7", "role=relay", "cluster=3f09a1c2",
            ])
    }

    @Test func theDefaultInstanceNameIsPeerdAndTheFirstEightCharactersOfTheReplicaID() {
        let advertisement = MDNSAdvertisement(
            replicaID: "0f3c9a7e-1b2d-4c5e", port: 4100, clusterFingerprint: "3f09a1c2")
        #expect(advertisement.instanceName == "peerd-0f3c9a7e")
        #expect(MDNSAdvertisement.defaultInstanceName(replicaID: "r1") == "peerd-r1")
    }

    @Test func theDefaultsAreAPeerSpeakingThisBuildsProtocolVersion() {
        let advertisement = MDNSAdvertisement(replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2")
        #expect(advertisement.role == .peer)
        #expect(advertisement.protocolVersion == Gossip.protocolVersion)
    }

    @Test func aClusterKeyIsAdvertisedByItsFingerprintAndNothingElseOfIt() throws {
        let key = try ClusterKey(bytes: (0..<32).map { UInt8($0) })
        let advertisement = MDNSAdvertisement(replicaID: "r1", port: 4100, clusterKey: key)
        #expect(advertisement.clusterFingerprint == key.fingerprint)
        #expect(advertisement.txtRecord.last == "cluster=\(key.fingerprint)")
        let keyHex = (0..<32).map { String(format: "%02x", $0) }.joined()
        for string in advertisement.txtRecord {
            #expect(!string.contains(keyHex.prefix(8)))
        }
        #expect(key.fingerprint.count == 8)
    }

    @Test func anAdvertisementThatDNSSDCannotCarryNamesItsProblem() {
        let fine = MDNSAdvertisement(replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2")
        #expect(fine.problem == nil)
        let longName = MDNSAdvertisement(
            replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", instanceName: String(repeating: "n", count: 64)
        )
        #expect(longName.problem?.contains("63 bytes") == true)
        let longID = MDNSAdvertisement(
            replicaID: String(repeating: "r", count: 260), port: 4100, clusterFingerprint: "3f09a1c2",
            instanceName: "peerd-long")
        #expect(longID.problem?.contains("255 bytes") == true)
    }

    @Test func rolesReadBackFromTheirTXTText() {
        #expect(NodeRole(text: "peer") == .peer)
        #expect(NodeRole(text: "RELAY") == .relay)
        #expect(NodeRole(text: NodeRole.relay.description) == .relay)
        #expect(NodeRole(text: "gateway") == nil)
        #expect(NodeRole(text: "") == nil)
    }
}

@Suite struct ServiceTXTTests {
    @Test func keysCompareCaseInsensitively() {
        let txt = ServiceTXT(["ID=r1", "Cluster=abc"])
        #expect(txt["id"] == "r1")
        #expect(txt["CLUSTER"] == "abc")
    }

    @Test func theFirstOccurrenceOfAKeyWins() {
        #expect(ServiceTXT(["id=first", "id=second", "ID=third"])["id"] == "first")
    }

    @Test func aStringWithoutEqualsIsAKeyWithAnEmptyValue() {
        let txt = ServiceTXT(["flag", "v=", "id=a=b"])
        #expect(txt["flag"] == "")
        #expect(txt["v"] == "")
        #expect(txt["id"] == "a=b")
        #expect(txt["missing"] == nil)
    }

    @Test func anEmptyKeyIsIgnored() {
        #expect(ServiceTXT(["=value"]).values.isEmpty)
    }

    @Test func whatAnAdvertisementPublishesParsesBack() {
        let advertisement = MDNSAdvertisement(
            replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", role: .relay)
        let txt = ServiceTXT(advertisement.txtRecord)
        #expect(txt[ServiceTXT.Key.replicaID] == "r1")
        #expect(txt[ServiceTXT.Key.protocolVersion] == "\(advertisement.protocolVersion)")
        #expect(txt[ServiceTXT.Key.role] == "relay")
        #expect(txt[ServiceTXT.Key.cluster] == "3f09a1c2")
    }
}
