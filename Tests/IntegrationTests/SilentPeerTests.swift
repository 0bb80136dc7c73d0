import Foundation
import SyncProtocol
import TestSupport
import Testing

/// A peer that stops answering without closing its connections (a hung
/// process; to the others, a host that dropped off the network looks the
/// same): only the dead-peer timeout can notice. `peerd-bench lab`
/// measures how long that takes across hosts; this shows it on loopback.
@Suite("peerd run: a peer that falls silent")
struct SilentPeerTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    @Test("a peer stopped with SIGSTOP is closed as `peer silent` by the 6 s dead-peer timeout, not sooner")
    func hungPeerIsClosedAsSilent() throws {
        try temp.cluster("a", ["b"])
        try temp.peerdOK(["item", "create", "Apples", "3"], "a")
        let a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try Convergence.wait([temp.url("a"), temp.url("b")])

        let stoppedAt = Date()
        #expect(kill(b.child.pid, SIGSTOP) == 0)
        // Its kernel keeps b's sockets open: no end of stream, no reset, only silence.
        let silent: @Sendable (LogRecord) -> Bool = { $0["reason"]?.hasPrefix("peer silent") == true }
        #expect(a.waitForEvent(.connectionClosed, where: silent), "\(a.stderr)")
        let closed = try #require(a.events(.connectionClosed).first(where: silent))
        let closedAt = try #require(closed.loggedAt, "\(closed.line)")
        // Counted from the last frame a heard (the cursor exchange every second): 5 to 7 s after the stop.
        let silence = closedAt.timeIntervalSince(stoppedAt)
        #expect(silence > 4 && silence < 10, "closed \(silence) s after the stop: \(closed.line)")
        #expect(try a.stop() == 0, "\(a.stderr)")
        #expect(try b.kill())
    }
}
