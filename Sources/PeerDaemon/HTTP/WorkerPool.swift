import Foundation

/// A fixed number of dedicated threads that run jobs in the order they were
/// submitted: the HTTP server's handlers and stream reads, which may block
/// on SQLite, run here and never on libmicrohttpd's polling thread or on
/// Swift's cooperative pool.
///
/// ```swift
/// let pool = WorkerPool(threads: 4, name: "peerd-http")
/// pool.submit { print("on a worker") }
/// pool.stop()
/// ```
///
/// `@unchecked Sendable`: the queue and the stop flag are only touched
/// with `condition` held.
final class WorkerPool: @unchecked Sendable {
    typealias Job = @Sendable () -> Void

    private let condition = NSCondition()
    private var queue: [Job] = []
    /// Index of the next job in `queue`; the front is dropped in batches.
    private var head = 0
    private var stopped = false

    /// Starts `threads` threads named `name-1`, `name-2`, ….
    init(threads: Int, name: String) {
        for number in 1...max(1, threads) {
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(number)"
            thread.start()
        }
    }

    /// Queues `job`; it never waits for a free thread. Returns false (and
    /// drops the job) once the pool is stopped.
    @discardableResult
    func submit(_ job: @escaping Job) -> Bool {
        condition.withLock {
            guard !stopped else { return false }
            queue.append(job)
            condition.signal()
            return true
        }
    }

    /// Drops the jobs that have not started; each thread ends after the
    /// job it is running, if any. Does not wait for them.
    func stop() {
        condition.withLock {
            stopped = true
            queue = []
            head = 0
            condition.broadcast()
        }
    }

    private func work() {
        while let job = take() { job() }
    }

    /// The next job, waiting for one; nil once stopped.
    private func take() -> Job? {
        condition.withLock {
            while head == queue.count && !stopped { condition.wait() }
            guard !stopped else { return nil }
            let job = queue[head]
            head += 1
            if head >= 64 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return job
        }
    }
}
