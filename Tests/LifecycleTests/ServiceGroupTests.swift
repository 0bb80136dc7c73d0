import Lifecycle
import Synchronization
import TestSupport
import Testing

/// What the services of a test did, in order.
final class Journal: Sendable {
    private let lines = Mutex<[String]>([])
    func note(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// A service that notes its start, runs until cancelled (or for `stopsAfter`
/// by itself), takes `stopTime` to stop, notes that, and may fail.
struct RecordingService: Service {
    let name: String
    let journal: Journal
    var stopsAfter: Duration?
    var stopTime: Duration = .zero
    var failure: (any Error)?

    func run() async throws {
        journal.note("start \(name)")
        if let stopsAfter {
            try? await Task.sleep(for: stopsAfter)  // the service's own work, not a wait for a condition
        } else {
            await Cancellation.wait()
        }
        // Slow to stop: the work of stopping goes on though the task is cancelled.
        if stopTime > .zero { await Task.detached { [stopTime] in try? await Task.sleep(for: stopTime) }.value }
        journal.note("stop \(name)")
        if let failure { throw failure }
    }
}

struct Boom: Error, Equatable {}

@Suite struct ServiceGroupTests {
    /// A stop trigger a test fires by hand, in place of Unix signals.
    func stops() -> (AsyncStream<String>, AsyncStream<String>.Continuation) {
        AsyncStream.makeStream(of: String.self)
    }

    @Test func aSignalStopsTheServicesInReverseOrderOfTheirStart() async throws {
        let journal = Journal()
        let (stream, stop) = stops()
        let group = ServiceGroup(
            ["storage", "gossip", "http"].map {
                RecordingService(name: $0, journal: journal, stopTime: .milliseconds(20))
            },
            shutdownDeadline: .seconds(10))
        async let outcome = group.run(stoppingOn: stream)
        try await Poll.eventually("every service started") { journal.all.count == 3 }
        #expect(Set(journal.all) == ["start storage", "start gossip", "start http"])
        stop.yield("TERM")
        #expect(try await outcome == .stopped(signal: "TERM"))
        #expect(journal.all.suffix(3) == ["stop http", "stop gossip", "stop storage"])
    }

    @Test func aCancelledRunStopsTheServicesInReverseOrder() async throws {
        let journal = Journal()
        let (stream, _) = stops()
        let group = ServiceGroup(
            ["storage", "http"].map { RecordingService(name: $0, journal: journal) }, shutdownDeadline: .seconds(10))
        let run = Task { try await group.run(stoppingOn: stream) }
        try await Poll.eventually("every service started") { journal.all.count == 2 }
        run.cancel()
        #expect(try await run.value == .stopped(signal: "cancelled"))
        #expect(journal.all.suffix(2) == ["stop http", "stop storage"])
    }

    @Test func aServiceThatEndsByItselfStopsTheOthers() async throws {
        let journal = Journal()
        let (stream, _) = stops()
        let services = [
            RecordingService(name: "storage", journal: journal),
            RecordingService(name: "gossip", journal: journal, stopsAfter: .milliseconds(50)),
            RecordingService(name: "http", journal: journal),
        ]
        let outcome = try await ServiceGroup(services, shutdownDeadline: .seconds(10)).run(stoppingOn: stream)
        #expect(outcome == .serviceEnded("gossip"))
        #expect(journal.all.suffix(3) == ["stop gossip", "stop http", "stop storage"])
    }

    /// The stuck service would take an hour to stop, so only the deadline
    /// can end the run; the time limit catches a deadline that never fires.
    /// (No tight bound on the wall time: the unit tests share a cooperative
    /// pool of two threads, and on a loaded machine the deadline's timer
    /// waits behind the other tests, over a minute once.)
    @Test(.timeLimit(.minutes(5))) func aServiceSlowerThanTheDeadlineIsAbandoned() async throws {
        let journal = Journal()
        let (stream, stop) = stops()
        let group = ServiceGroup(
            [
                RecordingService(name: "storage", journal: journal),
                RecordingService(name: "stuck", journal: journal, stopTime: .seconds(3600)),
            ], shutdownDeadline: .milliseconds(200))
        stop.yield("INT")
        let started = ContinuousClock.now
        #expect(try await group.run(stoppingOn: stream) == .deadlinePassed)
        #expect(ContinuousClock.now - started >= .milliseconds(200), "the stuck service had its deadline")
        #expect(!journal.all.contains("stop stuck"))
        #expect(!journal.all.contains("stop storage"), "storage waits for the services after it")
    }

    @Test func aFailureIsRethrownOnceEveryServiceStopped() async throws {
        let journal = Journal()
        let (stream, stop) = stops()
        let group = ServiceGroup(
            [
                RecordingService(name: "storage", journal: journal),
                RecordingService(name: "http", journal: journal, failure: Boom()),
            ], shutdownDeadline: .seconds(10))
        stop.yield("TERM")
        await #expect(throws: Boom.self) { try await group.run(stoppingOn: stream) }
        #expect(journal.all.suffix(2) == ["stop http", "stop storage"])
    }
}
