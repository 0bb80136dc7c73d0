import ChildProcesses
import Foundation
import Synchronization

/// What the demo must undo however it ends: the daemons it started, an
/// avahi-daemon it started, its temporary directory. Runs once, at the end
/// or on SIGINT/SIGTERM/SIGHUP (then the process exits 128 + the signal).
final class DemoCleanup: Sendable {
    private struct State {
        var children: [ChildProcess] = []
        var actions: [@Sendable () -> Void] = []
        var done = false
        var interrupted = false
    }

    private let state = Mutex(State())

    /// Stops `child` with SIGTERM at cleanup, and waits for it to end before
    /// removing anything. False when cleanup has already begun: the caller
    /// must stop it itself.
    func track(_ child: ChildProcess) -> Bool {
        state.withLock { state in
            guard !state.done else { return false }
            state.children.append(child)
            return true
        }
    }

    /// Forgets `child`, which ended or which the demo stopped itself.
    func untrack(_ child: ChildProcess) {
        state.withLock { $0.children.removeAll { $0 === child } }
    }

    /// Runs `action` at cleanup, after the daemons are stopped, the most
    /// recently added first.
    func atCleanup(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.actions.insert(action, at: 0) }
    }

    /// Stops every tracked process (SIGTERM, then SIGKILL after 10 s) and
    /// runs the actions. Only the first call does anything.
    func run() {
        let (children, actions) = state.withLock { state -> ([ChildProcess], [@Sendable () -> Void]) in
            guard !state.done else { return ([], []) }
            state.done = true
            return (state.children, state.actions)
        }
        for child in children where child.isRunning { kill(child.pid, SIGTERM) }
        let deadline = ContinuousClock.now + .seconds(10)
        for child in children where child.waitForExit(timeout: max(.zero, deadline - .now)) == nil {
            _ = try? child.stop(with: SIGKILL)
        }
        for action in actions { action() }
    }

    /// When a signal started the cleanup, blocks until its handler ends the
    /// process: the demo, whose commands fail once their files are gone,
    /// must not print those failures or exit with another code meanwhile.
    func waitForExitIfInterrupted() {
        guard state.withLock({ $0.interrupted }) else { return }
        DispatchSemaphore(value: 0).wait()
    }

    /// Cleans up and exits on SIGINT (Ctrl-C), SIGTERM or SIGHUP (the
    /// terminal closed), so no daemon outlives the demo. SIGPIPE is ignored:
    /// `DemoConsole` sees the failed write and raises SIGTERM. Keep the
    /// returned sources for as long as the demo runs.
    func exitOnSignals() -> [any DispatchSourceSignal] {
        signal(SIGPIPE, SIG_IGN)
        return [SIGINT, SIGTERM, SIGHUP].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                state.withLock { $0.interrupted = true }
                DemoConsole.lastWords("\ninterrupted: stopping the daemons and removing the demo's files")
                run()
                exit(128 + signalNumber)
            }
            source.resume()
            return source
        }
    }
}
