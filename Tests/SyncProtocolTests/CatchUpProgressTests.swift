import SyncProtocol
import Testing

@testable import SyncProtocol

@Suite struct CatchUpProgressTests {
    func field(_ record: LogRecord?, _ key: String) -> String? {
        record?.fields.first { $0.0 == key }?.1
    }

    @Test func aBacklogReportsOncePerSecondWithCountsAndRateThenCaughtUp() {
        var progress = CatchUpProgress(peer: "b")
        #expect(progress.observe(received: 0, remaining: 9_000, now: 10_000) == nil)
        #expect(progress.observe(received: 2_000, remaining: 7_000, now: 10_400) == nil, "not a second yet")
        let report = progress.observe(received: 3_000, remaining: 4_000, now: 11_000)
        #expect(report?.event == .catchingUp)
        #expect(field(report, "peer") == "b")
        #expect(field(report, "received") == "5000")
        #expect(field(report, "remaining") == "4000")
        #expect(field(report, "rate") == "5000/s")
        #expect(progress.observe(received: 1_000, remaining: 3_000, now: 11_500) == nil, "one line a second")
        let done = progress.observe(received: 3_000, remaining: 0, now: 11_600)
        #expect(done?.event == .caughtUp)
        #expect(field(done, "received") == "9000")
        #expect(field(done, "seconds") == "1.600")
        #expect(!progress.isCatchingUp)
    }

    @Test func aStuckBacklogDoesNotRepeatItsLine() {
        var progress = CatchUpProgress(peer: "b")
        _ = progress.observe(received: 0, remaining: 10, now: 0)
        #expect(progress.observe(received: 5, remaining: 5, now: 1_000) != nil)
        #expect(progress.observe(received: 0, remaining: 5, now: 2_000) == nil)
        #expect(progress.observe(received: 0, remaining: 5, now: 3_000) == nil)
    }

    @Test func eventsWithoutABacklogLogNothing() {
        var progress = CatchUpProgress(peer: "b")
        #expect(progress.observe(received: 3, remaining: 0, now: 0) == nil)
        #expect(!progress.isCatchingUp)
    }

    @Test func slowRatesKeepADecimal() {
        #expect(CatchUpProgress.rate(5, overMs: 2_000) == "2.5/s")
        #expect(CatchUpProgress.rate(259_000, overMs: 10_000) == "25900/s")
        #expect(CatchUpProgress.seconds(65_042) == "65.042")
    }
}
