import ChildProcesses
import DaemonClient
import Foundation

/// Live latency from outside: `POST /items` on the writer, timed until the
/// event (matched on the `replica_event_id` of the `201` body) shows up in
/// the receiver's change stream.
struct LiveProbe: Sendable {
    /// The daemon written to.
    let writer: DaemonEndpoint
    /// The change stream the write must reach.
    let receiver: ChangeFeed
    /// Goes into each item's name, to tell the phases' writes apart.
    let label: String
    /// Longest wait for the `201`.
    var writeSeconds = 5.0
    /// Longest wait for the event in the receiver's stream after the `201`.
    var arrivalSeconds = 10.0

    /// `count` samples (or, with nil, until `stop` is raised), sequential,
    /// one started every `intervalMs` (or at once after a slower one).
    func run(count: Int?, intervalMs: Int, stop: StopFlag? = nil) -> LiveSamples {
        var samples = LiveSamples()
        let interval = Duration.milliseconds(intervalMs)
        var next = ContinuousClock.now
        var index = 0
        while count.map({ index < $0 }) ?? true, !(stop?.isRaised ?? false) {
            let wait = next - .now
            if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
            next = max(next + interval, .now)
            sample(index, into: &samples)
            index += 1
        }
        return samples
    }

    /// Writes until one reaches the receiver (at most `seconds`): the
    /// daemons are connected and the receiver's stream is live.
    func waitForFirstDelivery(seconds: Double = 30) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var quick = self
        quick.arrivalSeconds = 2
        var samples = LiveSamples()
        while samples.latencies.isEmpty {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(
                    what: "a write to reach \(receiver.name)'s stream", timeout: .seconds(seconds),
                    details: samples.firstFailure ?? "")
            }
            quick.sample(samples.attempted, into: &samples)
        }
    }

    /// One write and its arrival.
    func sample(_ index: Int, into samples: inout LiveSamples) {
        // The clock makes every name new, across runs of the same label too.
        let name = "live \(label) \(index) \(monotonicNanoseconds())"
        let body = #"{"name":"\#(name)","quantity":\#(index % 1000)}"#
        let start = monotonicNanoseconds()
        let clock = ContinuousClock.now
        let answer: HTTPReply
        do {
            answer = try writer.send("POST", "/items", body: body, seconds: writeSeconds)
        } catch {
            samples.note(failure: "write: \(error)", timedOut: reachedDeadline(since: clock, seconds: writeSeconds))
            return
        }
        let acknowledged = monotonicNanoseconds()
        guard answer.status == 201, let id = answer.field("replica_event_id") else {
            samples.note(failure: "write answered \(answer.statusLine)", timedOut: false)
            return
        }
        let deadline = ContinuousClock.now + .milliseconds(Int(arrivalSeconds * 1000))
        guard let arrived = receiver.waitForArrival(of: id, until: deadline) else {
            samples.notReceived += 1
            samples.firstFailure =
                samples.firstFailure
                ?? "not in \(receiver.name)'s stream within \(arrivalSeconds) s\(receiver.failure.map { ": \($0)" } ?? "")"
            return
        }
        samples.acknowledgements.append(.nanoseconds(Int64(acknowledged - start)))
        samples.latencies.append(.nanoseconds(Int64(arrived - start)))
    }
}

/// What a run of live samples measured.
struct LiveSamples: Sendable {
    /// From just before the `POST` until the event arrived in the receiver's stream.
    var latencies: [Duration] = []
    /// From just before the `POST` until its `201` was read.
    var acknowledgements: [Duration] = []
    /// Writes that failed or were refused (no `201`).
    var writeFailures = 0
    /// Of those, writes that got no answer in time.
    var writeTimeouts = 0
    /// Writes acknowledged with `201` whose event never reached the receiver's stream in time.
    var notReceived = 0
    /// The first failure, for the report.
    var firstFailure: String?

    /// Samples tried: delivered or failed.
    var attempted: Int { latencies.count + writeFailures + notReceived }
    /// Every failure, of either kind.
    var failures: Int { writeFailures + notReceived }
    /// Percentiles of `latencies`.
    var summary: LatencySummary { LatencySummary(latencies) }

    mutating func note(failure: String, timedOut: Bool) {
        writeFailures += 1
        if timedOut { writeTimeouts += 1 }
        if firstFailure == nil { firstFailure = failure }
    }
}
