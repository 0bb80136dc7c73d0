// The test kit is one import: `import TestSupport` also brings what it
// builds on, as swift-nio's `NIO` module re-exports `NIOCore`.
//
// ChildProcesses: `ChildProcess` (a child with captured output, an empty
// signal mask, stopped with a signal and a deadline, killed when the test
// ends), `ChildProcess.run` (to completion), `Poll.until` and
// `Poll.eventually` (waiting with a deadline, never a fixed sleep).
@_exported import ChildProcesses
