import Foundation
import Replica
import Testing

@testable import SyncProtocol

@Suite struct ClaimGrantsTests {
    func request(_ offset: Int64, arrivedAt: Int64) -> StoredEvent {
        let event = Event(
            eventID: UUID(), feed: FeedID(replicaID: "phone"), seq: UInt64(offset), timeMs: arrivedAt,
            entityType: "item", entityID: "i\(offset)", payload: #"{"type":"ClaimRequested"}"#)
        return StoredEvent(event: event, offset: offset, arrivalTimeMs: arrivedAt)
    }

    @Test func theLowestIDOfTheConnectedRelaysLeadsAndAClaimNeedsAGrantOnlyWithARelay() {
        #expect(ClaimGrants.isLeader("b", connectedRelays: []))
        #expect(ClaimGrants.isLeader("b", connectedRelays: ["c", "d"]))
        #expect(!ClaimGrants.isLeader("b", connectedRelays: ["c", "a"]))
        #expect(ClaimGrants.needsGrant(isRelay: true, connectedRelays: []))
        #expect(ClaimGrants.needsGrant(isRelay: false, connectedRelays: ["r"]))
        #expect(!ClaimGrants.needsGrant(isRelay: false, connectedRelays: []))
    }

    @Test func theLeaderAnswersInArrivalOrderExpiredAfterTheLifetimeAndForgetsWhatIsAnswered() {
        var grants = ClaimGrants()
        let (old, fresh) = (request(3, arrivedAt: 1_000), request(7, arrivedAt: 40_000))
        let cut = grants.scanned([old, fresh], newest: 9)
        #expect(!cut)
        #expect(grants.scannedOffset == 9, "a scan that was not cut reaches the newest offset")
        let directives = grants.decide(leader: true, nowMs: 1_000 + ClaimGrants.requestLifetimeMs + 1)
        #expect(directives == [.answer(old, expired: true), .answer(fresh, expired: false)])
        grants.answered(old)
        #expect(grants.waiting == [fresh], "a failed write leaves the request to be answered again")
        let next = grants.decide(leader: true, nowMs: 41_000)
        #expect(next == [.answer(fresh, expired: false)])
    }

    @Test func aFollowerAnswersNothingAndLetsGoOnlyOfExpiredRequests() {
        var grants = ClaimGrants()
        let (old, fresh) = (request(1, arrivedAt: 0), request(2, arrivedAt: 20_000))
        _ = grants.scanned([old, fresh], newest: 2)
        let first = grants.decide(leader: false, nowMs: 30_001)
        #expect(first.isEmpty)
        #expect(grants.waiting == [fresh])
        let second = grants.decide(leader: false, nowMs: 50_000)
        #expect(second.isEmpty)
        #expect(grants.waiting == [fresh], "exactly the lifetime is not over yet")
        _ = grants.decide(leader: false, nowMs: 50_001)
        #expect(grants.waiting.isEmpty)
    }

    @Test func aFullScanStopsAtItsLastRequestSoTheNextScanGoesOn() {
        var grants = ClaimGrants()
        let page = (1...Int64(ClaimGrants.scanLimit)).map { request($0 * 2, arrivedAt: 0) }
        let cut = grants.scanned(page, newest: 5_000)
        #expect(cut, "cut at the limit: more may follow")
        #expect(grants.scannedOffset == Int64(ClaimGrants.scanLimit) * 2)
        let again = grants.scanned([], newest: 5_000)
        #expect(!again)
        #expect(grants.scannedOffset == 5_000)
        #expect(grants.waiting.count == ClaimGrants.scanLimit)
    }
}
