import DaemonClient
import Foundation
import Glibc
import Replica
import SyncProtocol
import Synchronization
import TestSupport
import Testing

/// `peerd run` over its whole life, driven through its HTTP API: the change
/// stream across a restart, SIGTERM under load, one daemon per data
/// directory, a flood of requests beside sync, and `peerd wait`.
@Suite("daemon lifecycle")
struct DaemonLifecycleTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    func dir(_ name: String) -> URL { temp.url(name) }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try temp.peerdOK(arguments, dir, sourceLocation: sourceLocation)
    }

    func cluster(_ first: String, _ others: String...) throws { try temp.cluster(first, others) }

    /// `peerd run` on `dir`, once it has logged `replica.running`: `Daemon.start` returns at
    /// `http on`, before the daemon handles SIGTERM (see `sigtermRightAfterStart`), and a test
    /// that stops a daemon soon after starting it must not trip over that.
    func run(
        _ dir: String, peers: [String] = [], logLevel: String = "debug",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Daemon {
        let daemon = try Daemon.start(data: self.dir(dir), peers: peers, logLevel: logLevel)
        try #require(daemon.waitForEvent(.replicaRunning), "\(daemon.stderr)", sourceLocation: sourceLocation)
        return daemon
    }

    /// A daemon's HTTP API, required.
    func api(_ daemon: Daemon, sourceLocation: SourceLocation = #_sourceLocation) throws -> DaemonEndpoint {
        try #require(daemon.api, "\(daemon.name) serves no HTTP API", sourceLocation: sourceLocation)
    }

    /// `POST /items`, requiring 201; returns the stored event.
    private func create(
        _ name: String, _ quantity: Int, on api: DaemonEndpoint, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StoredEventReply {
        let reply = try api.request("POST", "/items", body: #"{"name":"\#(name)","quantity":\#(quantity)}"#)
        try #require(
            reply.status == 201, "POST /items \(name): \(reply.status) \(reply.text)", sourceLocation: sourceLocation)
        return try StoredEventReply(reply.text)
    }

    // MARK: - Change stream across a restart

    @Test("the change stream resumes after a restart from Last-Event-ID or ?after=, and carries a peer's event")
    func changeStreamResumesAcrossRestart() throws {
        try cluster("a", "b")
        let first = try run("a")
        let stream = try api(first).events("/changes?after=0")
        #expect(stream.status == 200)

        let created = try (1...3).map { try create("Item \($0)", $0, on: api(first)) }
        for (index, made) in created.enumerated() {
            let change = try nextChange(stream, "event \(index + 1) on the stream")
            #expect(change.offset == Int64(index + 1))
            #expect(change.name == "event")
            #expect(change.eventID == made.eventID)
            #expect(change.entityID == made.entityID)
            #expect(change.projectionID == made.entityID)
            #expect(change.projectionName == "Item \(index + 1)")
        }

        #expect(try first.stop() == 0, "a: \(first.stderr)")
        #expect(first.events(.shutdownOverdue).isEmpty, "a: \(first.stderr)")
        expectEnd(stream, "the change stream after SIGTERM")

        // Two events written while no daemon runs: straight into the files.
        let offline = try ["Offline 4", "Offline 5"].map { try ok(["item", "create", $0, "1"], "a") }

        let second = try run("a")
        let resumed = try api(second).events("/changes", headers: [("Last-Event-ID", "3")])
        let after4 = try api(second).events("/changes?after=4")
        #expect(resumed.status == 200 && after4.status == 200)
        for (offset, entityID) in zip([Int64(4), 5], offline) {
            let change = try nextChange(resumed, "offset \(offset) after Last-Event-ID 3")
            #expect(change.offset == offset)
            #expect(change.entityID == entityID)
        }
        let five = try nextChange(after4, "offset 5 after ?after=4")
        #expect(five.offset == 5 && five.entityID == offline[1])

        // An event made on a peer: the next thing both open streams carry,
        // which also shows that neither repeated an offset it had sent.
        let peer = try run("b", peers: [second.address])
        let fromPeer = try create("Made on B", 6, on: api(peer))
        for (label, open) in [("Last-Event-ID 3", resumed), ("?after=4", after4)] {
            let change = try nextChange(open, "the peer's event on the \(label) stream")
            #expect(change.offset == 6, "\(label)")
            #expect(change.eventID == fromPeer.eventID, "\(label)")
            #expect(change.replicaID == fromPeer.replicaID, "\(label)")
            #expect(change.projectionName == "Made on B", "\(label)")
        }
        #expect(fromPeer.replicaID != (try ReplicaStatus.of(dir("a"))).replica_id)

        #expect(try peer.stop() == 0, "b: \(peer.stderr)")
        #expect(try second.stop() == 0, "a: \(second.stderr)")
        expectEnd(resumed, "the Last-Event-ID stream after SIGTERM")
        expectEnd(after4, "the ?after=4 stream after SIGTERM")
    }

    // MARK: - Clean shutdown under load

    @Test("SIGTERM under a write load exits 0 within 5 s and loses no acknowledged write")
    func cleanShutdownUnderLoad() throws {
        try cluster("a", "b")
        let daemon = try run("a", logLevel: "info")
        let peer = try run("b", peers: [daemon.address], logLevel: "info")
        #expect(daemon.waitForEvent(.peerIdentified), "a: \(daemon.stderr)")
        let endpoint = try api(daemon)

        let load = WriteLoad()
        let writers = DispatchGroup()
        for writer in 0..<4 {
            writers.enter()
            Thread.detachNewThread {
                defer { writers.leave() }
                load.write(to: endpoint, writer: writer)
            }
        }
        let acknowledged = Poll.until(timeout: .seconds(30)) { load.acknowledged.count >= 300 }
        load.stopSent.store(true, ordering: .releasing)
        let stopped = ContinuousClock.now
        let exit = Result { try daemon.stop(timeout: .seconds(5)) }
        let took = ContinuousClock.now - stopped
        load.finished.store(true, ordering: .releasing)
        #expect(writers.wait(timeout: .now() + 10) == .success, "the writers ended")
        try #require(acknowledged, "300 writes acknowledged within 30 s; got \(load.acknowledged.count)")

        #expect(try exit.get() == 0, "a: \(daemon.stderr)")
        #expect(took < .seconds(5), "stopped in \(took)")
        #expect(daemon.events(.replicaStopped).count == 1, "a: \(daemon.stderr)")
        #expect(daemon.events(.shutdownOverdue).isEmpty)
        let outcomes = load.outcomes
        #expect(outcomes.unexpected.isEmpty, "\(outcomes.unexpected.prefix(20))")
        #expect(!outcomes.afterStop.isEmpty, "requests were made after the stop")
        #expect(
            outcomes.afterStop.allSatisfy { $0 == "201" || $0 == "503" || $0 == "error" },
            "after the stop: \(outcomes.afterStop)")

        // Nothing acknowledged is lost: every event id is in the files.
        let acked = load.acknowledged
        #expect(Set(acked).count == acked.count, "each write stored its own event")
        let stored = Set(
            try ok(["events", "--json"], "a").split(separator: "\n").map { try StoredEventReply(String($0)).eventID })
        let lost = Set(acked).subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) of \(acked.count) acknowledged events are not in the database")
        #expect(!FileManager.default.fileExists(atPath: dir("a").appendingPathComponent("daemon.json").path))

        let again = try run("a")
        #expect(try api(again).request("GET", "/health").status == 200)
        #expect(try again.stop() == 0, "a: \(again.stderr)")
        #expect(try peer.stop() == 0, "b: \(peer.stderr)")
    }

    @Test("SIGTERM as soon as peerd run prints `http on` is a clean stop too")
    func sigtermRightAfterStart() throws {
        try ok(["init"], "a")
        // The window is narrow: a few rounds make a daemon that falls into it likely to show.
        var clean = true
        for round in 1...3 where clean {
            let daemon = try Daemon.start(data: dir("a"))
            // `http on` is printed before daemon.json is written and before SIGTERM is handled
            // (DaemonRuntime.start installs its signal sources last): a SIGTERM before
            // `signal(SIGTERM, SIG_IGN)` kills the daemon (143), one between that and the
            // dispatch source's `resume()` is ignored and the daemon runs on.
            switch Result(catching: { try daemon.stop(timeout: .seconds(3)) }) {
            case .success(let exit):
                #expect(exit == 0, "round \(round): SIGTERM right after start: exit \(exit)\n\(daemon.stderr)")
                clean = exit == 0
            case .failure(let error):
                Issue.record("round \(round): SIGTERM right after start was lost: \(error)")
                clean = false
            }
            let leftBehind = dir("a").appendingPathComponent("daemon.json")
            #expect(!FileManager.default.fileExists(atPath: leftBehind.path), "round \(round): daemon.json left behind")
            try? FileManager.default.removeItem(at: leftBehind)
        }
    }

    // MARK: - One daemon per data directory

    @Test("a second peerd run on a data directory is refused, naming the first; after kill -9 the lock is free")
    func singleDaemonPerDirectory() throws {
        try ok(["init"], "a")
        let first = try run("a")
        let second = try ChildProcess(
            Executables.url("peerd"),
            ["run", "--data", dir("a").path, "--http", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--no-mdns"],
            name: "second peerd run (a)")
        #expect(second.waitForExit(timeout: .seconds(10)) != nil, "the second daemon exits")
        let ended = try second.stop(with: SIGKILL)
        #expect(ended.reason == .exit && ended.status != 0, "second: \(ended) \(second.stderr.text)")
        #expect(second.stderr.text.contains("already running"), "\(second.stderr.text)")
        #expect(second.stderr.text.contains("pid \(first.child.pid)"), "\(second.stderr.text)")
        #expect(second.stdout.lines.allSatisfy { !$0.hasPrefix("listening on") }, "\(second.stdout.text)")

        #expect(try api(first).request("GET", "/health").status == 200)
        let info = try DaemonFile(dir("a"))
        #expect(info.pid == first.child.pid, "daemon.json still names the first daemon")

        #expect(try first.kill())
        let third = try run("a")
        #expect(try api(third).request("GET", "/health").status == 200)
        #expect(try DaemonFile(dir("a")).pid == third.child.pid, "the stale daemon.json was replaced")
        #expect(try third.stop() == 0, "a: \(third.stderr)")
    }

    // MARK: - A request flood beside sync

    @Test("a flood of API requests, oversized bodies and garbage does not stop sync")
    func requestFloodDoesNotStopSync() throws {
        try cluster("a", "b")
        let a = try run("a", logLevel: "info")
        let b = try run("b", peers: [a.address], logLevel: "info")
        let (apiA, apiB) = (try api(a), try api(b))

        let flood = Flood()
        let flooders = DispatchGroup()
        let started = ContinuousClock.now
        for worker in 0..<8 {
            flooders.enter()
            Thread.detachNewThread {
                defer { flooders.leave() }
                flood.run(against: apiA, worker: worker)
            }
        }
        let made = try Set((1...20).map { try create("From B \($0)", $0, on: apiB).entityID })
        var onA = Set<String>()
        let arrived = try Poll.until(timeout: .seconds(20), every: .milliseconds(50)) {
            onA = try itemIDs(apiA)
            return made.isSubset(of: onA)
        }
        let syncedAfter = ContinuousClock.now - started
        // The flood goes on until every kind of its requests has been answered at least once.
        _ = Poll.until(timeout: .seconds(15)) {
            let counts = flood.counts
            return Flood.Kind.allCases.allSatisfy { counts[$0, default: 0] > 0 }
        }
        flood.stop.store(true, ordering: .releasing)
        #expect(flooders.wait(timeout: .now() + 15) == .success, "the flood ended")

        #expect(arrived, "\(made.subtracting(onA).count) of B's 20 items missing on A after \(syncedAfter)")
        let counts = flood.counts
        #expect(flood.unexpected.isEmpty, "\(flood.unexpected.prefix(20))")
        for kind in Flood.Kind.allCases { #expect(counts[kind, default: 0] > 0, "no \(kind) request completed") }

        #expect(try apiA.request("GET", "/health").status == 200)
        let statuses = try Convergence.wait([dir("a"), dir("b")], timeout: .seconds(20))
        #expect(statuses[0].event_count == statuses[1].event_count)
        #expect(statuses[0].event_count == 20)
        let metrics = try apiA.request("GET", "/metrics")
        #expect(metrics.status == 200)
        let tooLarge = metricValue(metrics.text, #"peersync_http_requests_total{code="413"}"#) ?? 0
        // The 413s are answered by HTTPServer before DaemonAPI.handle, which is what counts requests.
        #expect(
            tooLarge > 0,
            "\(counts[.oversizedBody, default: 0]) bodies over 1 MiB got 413, but /metrics counts \(tooLarge)")
        #expect(try b.stop() == 0, "b: \(b.stderr)")
        #expect(try a.stop() == 0, "a: \(a.stderr)")
    }

    // MARK: - peerd wait

    @Test("peerd wait --converged-with: 0 when converged, 1 on timeout or without a daemon, 2 for a bad count")
    func waitForConvergence() throws {
        try cluster("a", "b")
        try ok(["init"], "c")
        let a = try run("a")
        let b = try run("b", peers: [a.address])
        _ = try create("Shared", 1, on: api(a))
        try Convergence.wait([dir("a"), dir("b")], timeout: .seconds(20))

        let converged = try Executables.peerd(["wait", "--converged-with", "1", "--timeout", "20"], data: dir("a"))
        #expect(converged.status == 0, "\(converged)")
        #expect(converged.stdout.split(separator: "\n").last == "converged", "\(converged)")

        let tooMany = try Executables.peerd(["wait", "--converged-with", "2", "--timeout", "1"], data: dir("a"))
        #expect(tooMany.status == 1, "\(tooMany)")
        #expect(tooMany.stderr.contains("not converged"), "\(tooMany)")

        let noDaemon = try Executables.peerd(["wait", "--converged-with", "1"], data: dir("c"))
        #expect(noDaemon.status == 1, "\(noDaemon)")
        #expect(noDaemon.stderr.contains("no daemon"), "\(noDaemon)")

        let notANumber = try Executables.peerd(["wait", "--converged-with", "x"], data: dir("a"))
        #expect(notANumber.status == 2, "\(notANumber)")
        #expect(notANumber.stderr.contains("--converged-with"), "\(notANumber)")

        #expect(try b.stop() == 0, "b: \(b.stderr)")
        #expect(try a.stop() == 0, "a: \(a.stderr)")
    }
}

// MARK: - Reading replies
