import Foundation
import Synchronization

/// The one thread that starts every child, with an empty signal mask.
///
/// A child inherits the signal mask of the thread that spawns it, and the
/// threads of a test runner (or of anything that handles signals with
/// Dispatch) block most signals: a child that does not unblock them itself
/// (tcpdump, avahi-daemon, a `peerd run` left by a script) would never see
/// SIGINT or SIGTERM. So children are spawned from this thread, which
/// empties its mask for the spawn only and blocks every signal otherwise
/// (a signal meant for this process never lands here).
///
/// One thread, not one per child: Foundation's `Process.run` ties a run
/// loop (three descriptors) to the thread that calls it, and those
/// descriptors would pile up in this process, where every later child's
/// descriptors are counted against its limit.
///
/// `@unchecked Sendable`: `jobs` is only touched with `ready` held.
final class ChildLauncher: @unchecked Sendable {
    static let shared = ChildLauncher()

    // `jobs` is read and written only while `ready` is locked.
    private let ready = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, nil)
            while true {
                ready.lock()
                while jobs.isEmpty { ready.wait() }
                let job = jobs.removeFirst()
                ready.unlock()
                job()
            }
        }
        thread.name = "child-launcher"
        thread.start()
    }

    /// Runs `process` on the launcher thread with an empty signal mask and waits until it has started.
    func launch(_ process: Process) throws {
        let outcome = Mutex<(any Error)??>(nil)
        let started = DispatchSemaphore(value: 0)
        ready.lock()
        jobs.append {
            var empty = sigset_t()
            var previous = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, &previous)
            let result: (any Error)?
            do {
                try process.run()
                result = nil
            } catch {
                result = error
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            outcome.withLock { $0 = .some(result) }
            started.signal()
        }
        ready.signal()
        ready.unlock()
        started.wait()
        if let error = outcome.withLock({ $0 }) ?? nil { throw error }
    }
}
