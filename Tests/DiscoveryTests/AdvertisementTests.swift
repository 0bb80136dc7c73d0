import Foundation
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
            replicaID: "0f3c9a7e-1b2d-4c5e", port: 4100, clusterFingerprint: "3f09a1c2", protocolVersion: 1)
        #expect(advertisement.instanceName == "peerd-0f3c9a7e")
        #expect(MDNSAdvertisement.defaultInstanceName(replicaID: "r1") == "peerd-r1")
    }

    @Test func theDefaultRoleIsPeer() {
        let advertisement = MDNSAdvertisement(
            replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", protocolVersion: 1)
        #expect(advertisement.role == .peer)
    }

    @Test func anAdvertisementThatDNSSDCannotCarryNamesItsProblem() {
        let fine = MDNSAdvertisement(replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", protocolVersion: 1)
        #expect(fine.problem == nil)
        let longName = MDNSAdvertisement(
            replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", protocolVersion: 1,
            instanceName: String(repeating: "n", count: 64))
        #expect(longName.problem?.contains("63 bytes") == true)
        let longID = MDNSAdvertisement(
            replicaID: String(repeating: "r", count: 260), port: 4100, clusterFingerprint: "3f09a1c2",
            protocolVersion: 1, instanceName: "peerd-long")
        #expect(longID.problem?.contains("255 bytes") == true)
    }

    @Test func rolesReadBackFromTheirTXTText() {
        #expect(ServiceRole(text: "peer") == .peer)
        #expect(ServiceRole(text: "RELAY") == .relay)
        #expect(ServiceRole(text: ServiceRole.relay.description) == .relay)
        #expect(ServiceRole(text: "gateway") == nil)
        #expect(ServiceRole(text: "") == nil)
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
            replicaID: "r1", port: 4100, clusterFingerprint: "3f09a1c2", role: .relay, protocolVersion: 1)
        let txt = ServiceTXT(advertisement.txtRecord)
        #expect(txt[ServiceTXT.Key.replicaID] == "r1")
        #expect(txt[ServiceTXT.Key.protocolVersion] == "\(advertisement.protocolVersion)")
        #expect(txt[ServiceTXT.Key.role] == "relay")
        #expect(txt[ServiceTXT.Key.cluster] == "3f09a1c2")
    }
}
