import Foundation
import Gossip
import Replica
import SyncProtocol

/// A relay's side of claims (docs/sessions.md): runs the `ClaimGrants`
/// core against the daemon's log, after every commit and every second
/// while a request waits (leadership may change without a commit).
///
/// `@unchecked Sendable`: `grants`, `scheduled` and `timer` are only
/// touched under `lock`; the answers are written through the storage
/// executor, on the grantor's own serial queue.
final class ClaimGrantor: @unchecked Sendable {
    private let storage: StorageExecutor
    private let clock: WallClock
    private let relaysConnected: @Sendable () -> [String]
    private let log: @Sendable (LogRecord) -> Void
    private let queue = DispatchQueue(label: "peersync.claim-grantor")
    private let lock = NSLock()
    private var grants = ClaimGrants()
    private var scheduled = false
    private var timer: DispatchSourceTimer?

    init(
        storage: StorageExecutor, clock: WallClock, relaysConnected: @escaping @Sendable () -> [String],
        log: @escaping @Sendable (LogRecord) -> Void
    ) {
        self.storage = storage
        self.clock = clock
        self.relaysConnected = relaysConnected
        self.log = log
    }

    /// Starts answering: after every commit, and every second while a request waits.
    func start() {
        storage.observe { [weak self] _ in self?.wake() }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1)
        // Commits wake `answerWaiting`; the timer only matters while a request waits.
        timer.setEventHandler { [weak self] in
            guard let self, !lock.withLock({ grants.waiting.isEmpty }) else { return }
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
            let from = lock.withLock { grants.scannedOffset }
            // The newest offset first: a request stored after it is found next time.
            let newest = try storage.read { try $0.lastOffset() }
            let found = try storage.read { try $0.claimRequests(after: from, limit: ClaimGrants.scanLimit) }
            let leader = ClaimGrants.isLeader(storage.replicaID, connectedRelays: relaysConnected())
            let (more, directives) = lock.withLock {
                (grants.scanned(found, newest: newest), grants.decide(leader: leader, nowMs: clock.nowMs()))
            }
            for case .answer(let request, let expired) in directives {
                let answer = try storage.write { try $0.answerClaimRequest(request.event, expired: expired) }
                lock.withLock { grants.answered(request) }
                if let answer { note(answer.event, for: request.event) }
            }
            if more { wake() }
        } catch {
            log(LogRecord(.warning, .claimsFailed, "cannot answer claim requests", [("error", "\(error)")]))
        }
    }

    private func note(_ answer: Event, for request: Event) {
        let (event, message): (LogEvent, String)
        switch SessionEvent.parse(answer.payload) {
        case .claimGranted: (event, message) = (.claimGranted, "claim granted")
        case .claimRefused(_, nil): (event, message) = (.claimExpired, "claim expired")
        case .claimRefused: (event, message) = (.claimRefused, "claim refused")
        default: return
        }
        log(
            LogRecord(
                .info, event, message,
                [
                    ("entity", "\(request.entityType)/\(request.entityID)"), ("requester", request.writer),
                    ("request", request.eventID.uuidString.lowercased()),
                ]))
    }
}
