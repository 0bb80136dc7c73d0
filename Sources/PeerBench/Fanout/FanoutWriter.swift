import DaemonClient
import Foundation
import Synchronization

/// The writes of `peerd-bench relay-fanout`: `threads` threads, each its own
/// HTTP client of the relay, together `POST /items` at `rate` items a
/// second for `seconds`, on a fixed schedule (a late write goes at once,
/// the next keeps its own time). Each item is named after the moment it
/// was sent (`FanoutDeliveries.namePrefix`).
struct FanoutWriter {
    let api: DaemonEndpoint
    let rate: Int
    let seconds: Double
    let threads: Int

    struct Outcome {
        var written = 0
        var failed = 0
        var lastFailure = ""
        /// Each `POST /items`, from its send to its answer.
        var requests: [Duration] = []
    }

    func run() -> Outcome {
        let outcome = Mutex(Outcome())
        let group = DispatchGroup()
        let total = Int((Double(rate) * seconds).rounded())
        let interval = 1.0 / Double(rate)
        let start = ContinuousClock.now
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread { [api] in
                defer { group.leave() }
                var mine = Outcome()
                // Write k of the schedule is due at start + k × interval; thread t takes k ≡ t (mod threads).
                for number in stride(from: thread, to: total, by: threads) {
                    let due = start + .nanoseconds(Int64(Double(number) * interval * 1e9))
                    let wait = due - ContinuousClock.now
                    if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }  // pacing, not waiting for a result
                    let sentAt = ContinuousClock.now
                    do {
                        try api.createItem("\(FanoutDeliveries.namePrefix)\(monotonicNanoseconds())")
                        mine.written += 1
                    } catch {
                        mine.failed += 1
                        mine.lastFailure = "\(error)"
                    }
                    mine.requests.append(ContinuousClock.now - sentAt)
                }
                outcome.withLock {
                    $0.written += mine.written
                    $0.failed += mine.failed
                    if !mine.lastFailure.isEmpty { $0.lastFailure = mine.lastFailure }
                    $0.requests += mine.requests
                }
            }
        }
        group.wait()
        return outcome.withLock { $0 }
    }
}
