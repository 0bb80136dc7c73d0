import Foundation
import Gossip
import Replica
import SyncProtocol

/// A relay's side of claims (docs/sessions.md): answers every claim request
/// it stores, one at a time in arrival order, so that of two requests for
/// one entity exactly one is granted. Of the relays connected to each
/// other, only the one with the lowest replica id answers; the others'
/// requests reach it through sync. A request nobody answered within
/// `Self.requestLifetimeMs` of its arrival is refused as expired.
final class ClaimGrantor: @unchecked Sendable {
    /// How long a request waits for an answer before it is refused.
    static let requestLifetimeMs: Int64 = 30_000

    private let storage: StorageExecutor
    private let replicaID: String
    private let relaysConnected: @Sendable () -> [String]
    private let log: @Sendable (LogRecord) -> Void
    private let queue = DispatchQueue(label: "peersync.claim-grantor")
    private let lock = NSLock()
    /// Requests seen and not answered yet, by arrival.
    private var waiting: [StoredEvent] = []
    private var scannedOffset: Int64 = 0
    private var scheduled = false
    private var timer: DispatchSourceTimer?

    init(
        storage: StorageExecutor, replicaID: String, relaysConnected: @escaping @Sendable () -> [String],
        log: @escaping @Sendable (LogRecord) -> Void
    ) {
        self.storage = storage
        self.replicaID = replicaID
        self.relaysConnected = relaysConnected
        self.log = log
    }

    /// Starts answering: after every commit, and every second while a
    /// request waits (leadership may change without a commit).
    func start() {
        storage.observe { [weak self] _ in self?.wake() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        // Commits wake `answerWaiting`; the timer only matters while a request waits.
        timer.setEventHandler { [weak self] in
            guard let self, !lock.withLock({ waiting.isEmpty }) else { return }
            answerWaiting()
        }
        timer.resume()
        lock.withLock { self.timer = timer }
        wake()
    }

    func stop() {
        lock.withLock {
            timer?.cancel()
            timer = nil
        }
    }

    /// True when this relay answers: the lowest id of itself and the relays it is connected to.
    var isLeader: Bool { (relaysConnected() + [replicaID]).min() == replicaID }

    private func wake() {
        let start = lock.withLock {
            defer { scheduled = true }
            return !scheduled
        }
        guard start else { return }
        queue.async { [weak self] in
            guard let self else { return }
            lock.withLock { scheduled = false }
            answerWaiting()
        }
    }

    private func answerWaiting() {
        do {
            let from = lock.withLock { scannedOffset }
            // The newest offset first: a request stored after it is found next time.
            let newest = try storage.read { try $0.lastOffset() }
            let found = try storage.read { try $0.claimRequests(after: from, limit: 500) }
            let requests = lock.withLock {
                waiting += found
                let scanned = found.count == 500 ? found[found.count - 1].offset : newest
                scannedOffset = max(scannedOffset, scanned, found.last?.offset ?? 0)
                return waiting
            }
            guard !requests.isEmpty else { return }
            let leader = isLeader
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            var settled: Set<UUID> = []
            for request in requests {
                let expired = nowMs - request.arrivalTimeMs > Self.requestLifetimeMs
                guard leader || expired else { continue }
                // A follower only drops what expired: the leader refuses it.
                if !leader {
                    settled.insert(request.event.eventID)
                    continue
                }
                let answer = try storage.write { try $0.answerClaimRequest(request.event, expired: expired) }
                settled.insert(request.event.eventID)
                if let answer { note(answer.event, for: request.event) }
            }
            lock.withLock { waiting.removeAll { settled.contains($0.event.eventID) } }
            if found.count == 500 { wake() }
        } catch {
            log(LogRecord(.warning, .claimsFailed, "cannot answer claim requests", [("error", "\(error)")]))
        }
    }

    private func note(_ answer: Event, for request: Event) {
        let event: LogEvent
        switch SessionEvent.parse(answer.payload) {
        case .claimGranted: event = .claimGranted
        case .claimRefused(_, let holder): event = holder == nil ? .claimExpired : .claimRefused
        default: return
        }
        log(
            LogRecord(
                .info, event, "claim \(event.rawValue.dropFirst("claim.".count))",
                [
                    ("entity", "\(request.entityType)/\(request.entityID)"), ("requester", request.writer),
                    ("request", request.eventID.uuidString.lowercased()),
                ]))
    }
}
