import Foundation
import TestSupport
import Testing

/// `mdns-probe` processes (``MDNSDiscovery`` alone) talking through real
/// avahi-daemons in `scripts/netlab.sh` hosts: network namespaces on one
/// bridge, each with its own D-Bus system bus and avahi-daemon. Every test
/// brings up a lab of its own and takes it down at the end.
@Suite(
    .serialized,
    .disabled(if: ProbeLab.unavailableReason != nil, Comment(rawValue: ProbeLab.unavailableReason ?? ""))
)
struct LabDiscoveryTests {
    @Test func twoHostsFindEachOtherWithTheirTXT() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001", port: 4100)
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002", port: 4200, role: "relay")
            try await lab.wait("a and b find each other") {
                a.hasFound(b.replicaID) && b.hasFound(a.replicaID)
            }
            #expect(
                a.found == [
                    .init(
                        replicaID: "bbbbbbbb-0002", address: "\(lab.address(of: 2)):4200", role: "relay", version: "5",
                        name: "peerd-bbbbbbbb")
                ])
            #expect(
                b.found == [
                    .init(
                        replicaID: "aaaaaaaa-0001", address: "\(lab.address(of: 1)):4100", role: "peer", version: "5",
                        name: "peerd-aaaaaaaa")
                ])
            #expect(a.warnings.isEmpty && b.warnings.isEmpty, "\(lab.details())")
        }
    }

    @Test func aPeerThatStartsIsFoundAndOneThatStopsIsLost() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            try await lab.wait("a publishes") { a.publications == 1 }
            // Five in turn: a keeps finding new peers after it lost others. How long each takes is
            // measured by `peerd-bench lab`.
            for round in 1...5 {
                let id = "b\(round)b\(round)b\(round)b\(round)-000\(round)"
                let b = try await lab.startProbe("b\(round)", on: 2, id: id)
                try await lab.wait("a finds \(id)") { a.hasFound(id) }
                try b.terminate()
                try await lab.wait("a loses \(id) when its probe stops") { a.lost.contains(id) }
            }
        }
    }

    @Test func avahiBrowseOnAnotherHostShowsTheTXTKeys() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            _ = try await lab.startProbe(
                "a", on: 1, id: "aaaaaaaa-0001", cluster: "3f09a1c2", port: 4321, role: "relay")
            var line = ""
            try await lab.wait("avahi-browse on host 2 resolves a", details: { line }) {
                let result = try await lab.exec(2, ["avahi-browse", "-rpt", "_peersync._tcp"])
                line =
                    result.stdout.split(separator: "\n").map(String.init).first {
                        $0.hasPrefix("=;") && $0.contains(";peerd-aaaaaaaa;")
                    } ?? result.stdout
                return line.hasPrefix("=;")
            }
            #expect(line.contains(";\(lab.address(of: 1));4321;"))
            for pair in ["id=aaaaaaaa-0001", "v=5", "role=relay", "cluster=3f09a1c2"] {
                #expect(line.contains("\"\(pair)\""), "\(line)")
            }
        }
    }

    @Test func servicesOfAnotherClusterAreIgnored() async throws {
        try await ProbeLab.with(hosts: 3) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001", cluster: "c1c1c1c1")
            let stranger = try await lab.startProbe("stranger", on: 2, id: "ssssssss-0002", cluster: "57257257")
            let c = try await lab.startProbe("c", on: 3, id: "cccccccc-0003", cluster: "c1c1c1c1")
            try await lab.wait("a finds c and notes the stranger's cluster") {
                a.hasFound(c.replicaID) && a.infos.contains { $0.contains("cluster '57257257'") }
            }
            try await lab.wait("the stranger notes a's cluster") {
                stranger.infos.contains { $0.contains("cluster 'c1c1c1c1'") }
            }
            #expect(!a.hasFound(stranger.replicaID))
            #expect(!c.hasFound(stranger.replicaID))
            #expect(stranger.found.isEmpty)
            #expect(a.infos.filter { $0.contains("cluster '57257257'") }.count == 1)
        }
    }

    @Test func thisReplicasOwnServicesAreIgnoredEvenFromAnotherHost() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            // Another process of the same replica (same id) elsewhere, published before b starts.
            let twin = try await lab.startProbe("twin", on: 2, id: "aaaaaaaa-0001", port: 4300, name: "peerd-twin")
            try await lab.wait("the twin publishes") { twin.publications == 1 }
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002", port: 4200)
            try await lab.wait("a and the twin find b") {
                a.hasFound(b.replicaID) && twin.hasFound(b.replicaID)
            }
            #expect(a.found.map(\.replicaID) == [b.replicaID], "\(lab.details())")
            #expect(twin.found.map(\.replicaID) == [b.replicaID], "\(lab.details())")
        }
    }

    @Test func aRestartedAvahiDaemonGetsTheServiceBackWithoutRestartingTheProcess() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002")
            try await lab.wait("b finds a") { b.hasFound(a.replicaID) }
            let pid = a.pid
            try await lab.avahiStop(1, signal: "TERM")
            try await lab.wait("b loses a (the stopping daemon sends goodbyes)") {
                b.lost.contains(a.replicaID)
            }
            try await lab.wait("a warns that avahi-daemon is gone") {
                a.warnings.contains { $0.contains("avahi-daemon is not running") }
            }
            try await lab.avahiStart(1)
            try await lab.wait("b finds a again") {
                b.found.filter { $0.replicaID == a.replicaID }.count == 2
            }
            #expect(a.pid != nil && a.pid == pid)
            #expect(a.publications == 2)
            #expect(a.infos.contains { $0.contains("avahi-daemon is available") })
        }
    }

    @Test func aCrashedAvahiDaemonGetsTheServiceBackWhenItIsStartedAgain() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002")
            try await lab.wait("b finds a") { b.hasFound(a.replicaID) }
            try await lab.avahiStop(1, signal: "KILL")
            try await lab.wait("a notices the daemon is gone") {
                a.infos.contains { $0.contains("lost avahi-daemon") }
            }
            try await lab.avahiStart(1)
            try await lab.wait("a publishes again") { a.publications == 2 }
            var browse = ""
            try await lab.wait("host 1's own avahi-daemon lists a again", details: { browse }) {
                browse = try await lab.exec(1, ["avahi-browse", "-rpt", "_peersync._tcp"]).stdout
                return browse.contains(";peerd-aaaaaaaa;") && browse.contains("\"id=aaaaaaaa-0001\"")
            }
            // The crashed daemon sent no goodbye: b still holds a's record (NETLAB.md: for many minutes).
            print("discovery: after an avahi-daemon SIGKILL the other host reported lost: \(b.lost)")
            #expect(a.warnings.count == 1, "\(lab.details())")
        }
    }

    @Test func noAvahiDaemonAtStartWarnsOnceThenPublishesWhenItStarts() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002")
            try await lab.avahiStop(1)
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            try await lab.wait("a warns that avahi-daemon is not running") {
                a.warnings.contains { $0.contains("avahi-daemon is not running") && $0.contains("static peers") }
            }
            try await lab.avahiStart(1)
            try await lab.wait("b finds a and a finds b") {
                b.hasFound(a.replicaID) && a.hasFound(b.replicaID)
            }
            #expect(a.warnings.count == 1, "\(lab.details())")
        }
    }

    @Test func noDBusSystemBusAtStartWarnsOnceAndRetriesUntilItAppears() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002")
            // a's bus address names a socket that does not exist yet; later it becomes host 1's bus.
            let lateBus = lab.path("late-bus")
            let a = try await lab.startProbe(
                "a", on: 1, id: "aaaaaaaa-0001", extra: ["--retry-ms", "200"],
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(lateBus)"])
            try await lab.wait("a warns that there is no bus") {
                a.warnings.contains { $0.contains("no D-Bus system bus") && $0.contains("static peers") }
            }
            // No one tells a: only its retries can notice.
            try FileManager.default.createSymbolicLink(atPath: lateBus, withDestinationPath: lab.busSocket(of: 1))
            try await lab.wait("b finds a once the bus is there") { b.hasFound(a.replicaID) }
            #expect(a.warnings.count == 1, "\(lab.details())")
        }
    }

    @Test func twoServicesWithOneNameOnTwoHostsEndWithOneRenamed() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001", name: "peerd-same")
            try await lab.wait("a publishes") { a.publications == 1 }
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002", name: "peerd-same")
            try await lab.wait("b renames, publishes, and each finds the other") {
                b.infos.contains("info published 'peerd-same #2' on port 4100") && a.hasFound(b.replicaID)
                    && b.hasFound(a.replicaID)
            }
            #expect(b.infos.contains { $0.contains("renamed to 'peerd-same #2'") })
            #expect(a.found.map(\.name) == ["peerd-same #2"])
            #expect(b.found.map(\.name) == ["peerd-same"])
            #expect(a.infos.filter { $0.contains("renamed") }.isEmpty)
        }
    }

    @Test func aHostWithMulticastOffIsNotFoundUntilItIsOnAgain() async throws {
        try await ProbeLab.with(hosts: 2) { lab in
            try await lab.blockMulticast(2)
            let b = try await lab.startProbe("b", on: 2, id: "bbbbbbbb-0002")
            let a = try await lab.startProbe("a", on: 1, id: "aaaaaaaa-0001")
            // Both have probed for their names (3 × 250 ms) and browsed meanwhile: with multicast they
            // would have met by now.
            try await lab.wait("both publish") { a.publications == 1 && b.publications == 1 }
            #expect(a.found.isEmpty && b.found.isEmpty, "\(lab.details())")
            try await lab.unblockMulticast(2)
            try await lab.wait("they find each other") {
                a.hasFound(b.replicaID) && b.hasFound(a.replicaID)
            }
        }
    }
}
