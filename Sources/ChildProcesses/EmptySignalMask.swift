import Foundation
import Synchronization

/// Starting a child with an empty signal mask.
///
/// A child inherits the signal mask of the thread that spawns it, and the
/// threads of a test runner (or of anything that handles signals with
/// Dispatch) block most signals: a child that does not unblock them itself
/// (tcpdump, avahi-daemon, a `peerd run` left by a script) would never see
/// SIGINT or SIGTERM. So every child is spawned from a fresh thread whose
/// mask is empty.
enum EmptySignalMask {
    /// Runs `process` from a new thread with an empty signal mask and waits until it has started.
    static func launch(_ process: Process) throws {
        let outcome = Mutex<(any Error)??>(nil)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            let result: (any Error)?
            do {
                try process.run()
                result = nil
            } catch {
                result = error
            }
            outcome.withLock { $0 = .some(result) }
            started.signal()
        }
        thread.start()
        started.wait()
        if let error = outcome.withLock({ $0 }) ?? nil { throw error }
    }
}
