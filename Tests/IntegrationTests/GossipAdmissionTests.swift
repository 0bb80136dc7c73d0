import DaemonClient
import Foundation
import Glibc
import SyncProtocol
import Synchronization
import TestSupport
import Testing

/// Strangers on the gossip port (docs/protocol.md, "Admission"): they cost
/// no thread, a handshake has an absolute deadline, frames before it is
/// done are small, refusals are logged once per kind per interval, and a
/// daemon out of file descriptors accepts again once they free up, while
/// its peers keep syncing.
@Suite("peerd run: strangers on the gossip port")
struct GossipAdmissionTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// A handshake init as a stranger without the key would send it: 43 bytes.
    static let handshakeInit: [UInt8] =
        [0, 0, 0, 39, 1] + Array("PSYN".utf8) + [0, 2] + (0..<32).map { _ in UInt8.random(in: 0...255) }

    /// `VmRSS` of `/proc/PID/status`, in MiB.
    static func residentMiB(_ pid: Int32) throws -> Double {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kibibytes: Double? = Double(String(line.filter(\.isNumber)))
        return try #require(kibibytes) / 1024
    }

    /// `peersync_connections_refused_total` of `reason`.
    static func refused(_ reason: String, _ api: DaemonEndpoint) throws -> Int {
        let prefix = "peersync_connections_refused_total{reason=\"\(reason)\"} "
        let metrics = try api.request("GET", "/metrics").text
        let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(prefix) })
        return try #require(Int(line.dropFirst(prefix.count)))
    }

    /// Creates an item on `a` and waits until `b` holds it; returns how long that took.
    func liveWrite(_ a: Daemon, _ b: Daemon, name: String) throws -> Duration {
        let started = ContinuousClock.now
        let reply = try #require(a.api).request("POST", "/items", body: #"{"name":"\#(name)","quantity":1}"#)
        try #require(reply.status == 201, "\(reply.text)")
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])?["entity_id"] as? String)
        let arrived = try Poll.until(timeout: .seconds(10)) {
            try #require(b.api).request("GET", "/items/\(id)").status == 200
        }
        try #require(arrived, "\(name) did not reach b")
        return ContinuousClock.now - started
    }

    @Test(
        "100 oversized frames, 50 tricklers and 1,000 idle strangers: no thread each, the deadline cuts the tricklers, one line per kind, and a peer keeps syncing"
    )
    func strangersCostLittleAndAreCutOnTime() throws {
        try temp.cluster("a", ["b"])
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        let api = try #require(a.api)
        var live = [try liveWrite(a, b, name: "before")]
        let threadsBefore = try ProcessCensus.threads(a.child.pid)
        let memoryBefore = try Self.residentMiB(a.child.pid)

        // 100 strangers, one after another, announce a 4 MiB frame before any handshake.
        let oversized: [UInt8] = [0, 0x40, 0, 0, 1] + Array(repeating: 7, count: 65_536)
        for _ in 0..<100 {
            let connection = try RawConnection(port: a.port)
            connection.send(oversized)
            #expect(connection.waitReadable(milliseconds: 5_000) && !connection.isOpen, "cut at the frame header")
        }
        #expect(try Self.refused("bad_frame", api) == 100)

        // 50 strangers trickle a handshake init, a byte every 2 s: the first
        // 16 (the per-address cap) get a handshake slot, the rest are closed at once.
        let connectedAt = ContinuousClock.now
        let handshakeInit = Self.handshakeInit
        let tricklers = Trickle(try (0..<50).map { _ in try RawConnection(port: a.port) }, every: 2) { round in
            round < handshakeInit.count ? handshakeInit[round] : nil
        }
        defer { tricklers.stop() }
        // 1,000 idle strangers on top: no slot is left for them.
        let idle = try (0..<1_000).map { _ in try RawConnection(port: a.port) }
        for index in 0..<5 { live.append(try liveWrite(a, b, name: "during \(index)")) }
        #expect(try ProcessCensus.threads(a.child.pid) <= threadsBefore + 2, "no thread per stranger")
        #expect(try Self.residentMiB(a.child.pid) < memoryBefore + 40, "memory stays bounded")
        let held = Poll.until(timeout: .seconds(5)) { idle.allSatisfy { !$0.isOpen } }
        #expect(held, "idle strangers over the cap are closed at accept")
        #expect(tricklers.openCount == 16, "16 tricklers wait in the handshake")

        // The deadline (10 s from accept) cuts them, though each sends a byte every 2 s.
        let cut = Poll.until(timeout: .seconds(20)) { tricklers.openCount == 0 }
        let elapsed = ContinuousClock.now - connectedAt
        #expect(cut, "tricklers still open after \(elapsed)")
        #expect(elapsed >= .seconds(9) && elapsed < .seconds(15), "cut by the 10 s deadline, after \(elapsed)")
        #expect(try Self.refused("handshake_deadline", api) == 16)
        #expect(try Self.refused("too_many_from_host", api) == 34 + 1_000)

        // One line per kind, then one summary per kind when its interval ends.
        let refusals = a.events(.connectionRefused)
        #expect(refusals.count <= 3, "\(refusals.count) refusal lines: \(refusals.prefix(5))")
        let summarized = Poll.until(timeout: .seconds(15)) {
            a.events(.connectionsRefused, ["kind": "too_many_from_host", "count": "1033"]).count == 1
        }
        #expect(summarized, "\(a.events(.connectionsRefused).map(\.line))")

        live.append(try liveWrite(a, b, name: "after"))
        #expect(live.allSatisfy { $0 < .seconds(2) }, "live writes kept reaching b: \(live)")
        #expect(a.events(.peerIdentified).count == 1, "b's connection lasted throughout")
        #expect(try a.stop() == 0, "\(a.stderr)")
        #expect(try b.stop() == 0)
    }

    @Test("a daemon out of file descriptors says so once, and accepts a peer again once they free up")
    func outOfDescriptorsAcceptsAgain() throws {
        try temp.cluster("d", ["e"])
        // Started with a low limit, then (as what it inherits from this test
        // process varies) lowered to 8 above what it holds once it runs.
        let d = try Daemon.start(data: temp.url("d"), logLevel: "info", descriptorLimit: 64)
        let limit = try ProcessCensus.descriptors(d.child.pid) + 8
        try #require(limit <= 64, "d holds \(limit - 8) descriptors at start")
        let lowered = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/prlimit"), ["--pid", "\(d.child.pid)", "--nofile=\(limit):\(limit)"])
        try #require(lowered.status == 0, "\(lowered)")

        // More connections than descriptors: the first ones take the last
        // descriptors, the rest wait in the backlog while accepting rests.
        let started = ContinuousClock.now
        var strangers: [RawConnection] = []
        for _ in 0..<60 { if let connection = try? RawConnection(port: d.port) { strangers.append(connection) } }
        let exhausted = Poll.until(timeout: .seconds(30)) {
            !d.events(.listenerFailed).isEmpty
        }
        #expect(exhausted, "d ran out of descriptors:\n\(d.stderr)")
        strangers.removeAll()

        let e = try Daemon.start(data: temp.url("e"), peers: [d.address], logLevel: "info")
        #expect(e.waitForEvent(.peerIdentified), "e reached d once descriptors were free:\n\(d.stderr)")
        // Accepting failed every 250 ms while the strangers held the
        // descriptors, yet the log says so once per 10 s interval.
        let intervals = Int((ContinuousClock.now - started) / .seconds(10)) + 1
        let failures = d.events(.listenerFailed)
        #expect(
            !failures.isEmpty && failures.count <= intervals, "logged once per interval, not per attempt: \(failures)")
        #expect(failures.first?["error"]?.contains("Too many open files") == true)
        #expect(try d.stop() == 0, "\(d.stderr)")
        #expect(try e.stop() == 0)
    }
}
