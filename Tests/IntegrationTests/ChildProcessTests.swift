import Foundation
import Synchronization
import TestSupport
import Testing

/// What `ChildProcess` promises the demo, the benchmark and the tests: an
/// empty signal mask, pipes that never block the child, a deadline on
/// stopping, and no child left behind.
@Suite("ChildProcess: the children of the demo, the benchmark and the tests")
struct ChildProcessTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("a child starts with an empty signal mask even from a thread that blocks every signal")
    func emptySignalMask() throws {
        let outcome = Mutex<Result<ProcessResult, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, nil)
            outcome.withLock {
                $0 = Result { try ChildProcess.run(Self.shell, ["-c", "grep SigBlk /proc/self/status"]) }
            }
            done.signal()
        }
        done.wait()
        let result = try #require(outcome.withLock { $0 }).get()
        #expect(result.stdout.split(whereSeparator: \.isWhitespace) == ["SigBlk:", "0000000000000000"], "\(result)")
    }

    @Test("a child that writes far more than a pipe holds, on both outputs, runs to its end")
    func fullPipesNeverBlock() throws {
        let script = "head -c 1000000 /dev/zero | tr '\\0' o; head -c 1000000 /dev/zero | tr '\\0' e >&2"
        let result = try ChildProcess.run(Self.shell, ["-c", script], timeout: .seconds(30))
        #expect(result.status == 0)
        #expect(result.stdout.utf8.count == 1_000_000 && result.stdout.allSatisfy { $0 == "o" })
        #expect(result.stderr.utf8.count == 1_000_000 && result.stderr.allSatisfy { $0 == "e" })
    }

    @Test("stop kills a child that ignores the signal once the deadline passes, and says so")
    func stopHasADeadline() throws {
        let child = try ChildProcess(
            Self.shell, ["-c", "trap '' TERM; echo ready; while :; do :; done"], name: "a stubborn child")
        #expect(child.stdout.firstLine(startingWith: "ready", timeout: .seconds(30)) != nil)
        #expect(throws: ChildProcessError.self) { try child.stop(with: SIGTERM, timeout: .milliseconds(300)) }
        #expect(child.termination == Termination(reason: .uncaughtSignal, status: SIGKILL))
    }

    @Test("a child still running when its ChildProcess goes away is killed")
    func noChildOutlivesItsOwner() throws {
        var child: ChildProcess? = try ChildProcess(Self.shell, ["-c", "echo ready; exec sleep 60"], name: "sleep")
        let pid = try #require(child?.pid)
        #expect(child?.stdout.firstLine(startingWith: "ready", timeout: .seconds(30)) != nil)
        child = nil
        // deinit killed it and reaped it: the pid names no process now.
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    @Test("a program that does not exist is an error, not a crash")
    func missingProgramThrows() {
        #expect(throws: (any Error).self) {
            try ChildProcess(URL(fileURLWithPath: "/nonexistent/peerd"), [], name: "nothing")
        }
    }
}
