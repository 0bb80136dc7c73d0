// The test kit is one import: `import TestSupport` also brings the two
// libraries it builds on, as swift-nio's `NIO` module re-exports `NIOCore`.
//
// ChildProcesses: `ChildProcess` (a child with captured output, an empty
// signal mask, stopped with a signal and a deadline, killed when the test
// ends), `ChildProcess.run` (to completion), `Poll.until` and
// `Poll.eventually` (waiting with a deadline, never a fixed sleep).
//
// NetworkLab: `NetLab`, hosts of scripts/netlab.sh (network namespaces,
// each with its own D-Bus and avahi-daemon), the processes spawned in
// them, and `peerd` on them.
@_exported import ChildProcesses
@_exported import NetworkLab
