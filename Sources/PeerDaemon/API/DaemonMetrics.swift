import Foundation
import Gossip
import SyncProtocol

/// What the daemon itself counts for `GET /metrics`, beside sync's own
/// `SyncMetrics`: appends through the API and their latency, and requests.
///
/// `@unchecked Sendable`: the counters are only touched with `lock` held.
final class DaemonMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private var appended = 0
    private var appendLatency = LatencyHistogram()
    private var requests: [Int: Int] = [:]

    func recordAppend(seconds: Double) {
        lock.withLock {
            appended += 1
            appendLatency.record(seconds: seconds)
        }
    }

    func countRequest(status: Int) {
        lock.withLock { requests[status, default: 0] += 1 }
    }

    var snapshot: (appended: Int, appendLatency: LatencyHistogram, requests: [Int: Int]) {
        lock.withLock { (appended, appendLatency, requests) }
    }
}
