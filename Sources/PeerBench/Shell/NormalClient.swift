import DaemonClient
import Foundation

/// A well-behaved API client: sequential requests, each on a new
/// connection with a 5 s timeout, counted by outcome.
struct NormalClient: Sendable {
    let api: DaemonEndpoint
    var timeoutSeconds = 5.0

    /// `health` times `GET /health`, then `writes` times `POST /items`; stops early when `stop` is raised.
    func run(health: Int, writes: Int, stop: StopFlag) -> NormalClientResult {
        var result = NormalClientResult()
        for _ in 0..<health where !stop.isRaised {
            result.health.time(expecting: 200, seconds: timeoutSeconds) {
                try api.send("GET", "/health", seconds: timeoutSeconds)
            }
        }
        for index in 0..<writes where !stop.isRaised {
            let body = #"{"name":"normal client \#(index) \#(monotonicNanoseconds())","quantity":2}"#
            result.writes.time(expecting: 201, seconds: timeoutSeconds) {
                try api.send("POST", "/items", body: body, seconds: timeoutSeconds)
            }
        }
        return result
    }
}

/// What a `NormalClient` run got.
struct NormalClientResult: Sendable {
    var health = RequestTally()
    var writes = RequestTally()

    /// The first failure of either kind.
    var firstFailure: String? { health.firstFailure ?? writes.firstFailure }
}

/// Requests of one kind: how many were tried, answered as expected, failed
/// (of those, timed out), and how long the good ones took.
struct RequestTally: Sendable {
    var tried = 0
    var ok = 0
    var failed = 0
    var timedOut = 0
    /// Of the requests answered as expected.
    var latencies: [Duration] = []
    /// What went wrong first, for the report.
    var firstFailure: String?

    /// Sends one request through `body` and counts it.
    mutating func time(expecting status: Int, seconds: Double, _ body: () throws -> HTTPReply) {
        tried += 1
        let start = ContinuousClock.now
        do {
            let answer = try body()
            guard answer.status == status else {
                failed += 1
                if firstFailure == nil { firstFailure = "answered \(answer.statusLine)" }
                return
            }
            ok += 1
            latencies.append(ContinuousClock.now - start)
        } catch {
            failed += 1
            if reachedDeadline(since: start, seconds: seconds) { timedOut += 1 }
            if firstFailure == nil { firstFailure = "\(error)" }
        }
    }

    /// Adds another tally's counts (one per flood thread).
    mutating func add(_ other: RequestTally) {
        tried += other.tried
        ok += other.ok
        failed += other.failed
        timedOut += other.timedOut
        latencies += other.latencies
        firstFailure = firstFailure ?? other.firstFailure
    }

    /// `1.2 / 8.0`: p50 / max of the good requests in ms.
    var figures: String {
        guard !latencies.isEmpty else { return "—" }
        let summary = LatencySummary(latencies)
        return "\(Figure.ms(summary.p50)) / \(Figure.ms(summary.max))"
    }

    /// `0`, or `12 (3 timed out)`.
    var failureText: String { failed == 0 ? "0" : "\(Figure.count(failed)) (\(Figure.count(timedOut)) timed out)" }
}
