import CLinux
import Foundation

/// A thread of its own at a lower CPU priority (nice +10) for catch-up
/// work: pages read for a peer that is far behind, large batches stored
/// from one, large batches sealed for one. Live events, keepalives and the
/// other programs on the device then keep their CPU while a catch-up runs;
/// an idle machine runs the catch-up at full speed all the same.
///
/// Work runs one piece at a time, in order.
///
/// ```swift
/// let worker = CatchUpWorker(name: "peersync-catch-up-reads")
/// let page = worker.run { try log.eventsInCanonicalOrder(of: ranges, maxEvents: 5_000, maxBytes: 2 << 20) }
/// worker.stop()
/// ```
///
/// `@unchecked Sendable`: `pending` is guarded by its mutex and the
/// condition; the thread touches nothing else.
final class CatchUpWorker: @unchecked Sendable {
    /// How much nicer than the rest of the process the thread runs.
    static let niceness: Int32 = 10

    private let condition = NSCondition()
    private var pending: [() -> Void] = []
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in work() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the worker and waits for its result.
    func run<T>(_ body: @escaping () throws -> T) throws -> T {
        let outcome = Outcome<T>()
        enqueue {
            outcome.result = Result { try body() }
            outcome.done.signal()
        }
        outcome.done.wait()
        return try outcome.result!.get()
    }

    /// Runs `body`, which cannot fail, on the worker and waits for its result.
    func run<T>(_ body: @escaping () -> T) -> T {
        // `body` throws nothing, so neither does this.
        try! run { () throws -> T in body() }
    }

    /// One piece of work's result, handed from the worker to the waiting caller.
    /// `@unchecked Sendable`: `result` is written before `done` is signalled
    /// and read only after waiting on it.
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
        let done = DispatchSemaphore(value: 0)
    }

    /// Runs `body` on the worker later.
    func async(_ body: @escaping @Sendable () -> Void) {
        enqueue(body)
    }

    /// Finishes the work handed over, then ends the thread; later calls return at once.
    func stop() {
        let first = condition.withLock {
            defer { stopping = true }
            condition.signal()
            return !stopping
        }
        if first { finished.wait() }
    }

    private func enqueue(_ body: @escaping () -> Void) {
        condition.withLock {
            pending.append(body)
            condition.signal()
        }
    }

    private func work() {
        _ = peersync_lower_thread_priority(Self.niceness)
        while true {
            let next: (() -> Void)? = condition.withLock {
                while pending.isEmpty && !stopping { condition.wait() }
                return pending.isEmpty ? nil : pending.removeFirst()
            }
            guard let next else { break }
            next()
        }
        finished.signal()
    }
}
