import CLinux
import Foundation
import Glibc
import Synchronization

/// Unix signals as an async sequence of their names (`TERM`, `INT`), as
/// swift-service-lifecycle's `UnixSignalsSequence`. From `init` on, each
/// signal's handler only writes its number to a pipe (async-signal-safe,
/// whichever thread the kernel picks), and a thread of its own hands the
/// names to the sequence; one that comes before anyone iterates waits
/// there. One instance per process.
///
/// ```swift
/// for await name in UnixSignals([SIGTERM, SIGINT]) { print("got", name); break }
/// ```
public final class UnixSignals: AsyncSequence, Sendable {
    public typealias Element = String

    private let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let pipeEnds: (read: Int32, write: Int32)
    private let signals: [Int32]
    private let finished = Atomic<Bool>(false)

    public init(_ signals: [Int32]) {
        self.signals = signals
        (stream, continuation) = AsyncStream.makeStream(of: String.self)
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        pipeEnds = (ends[0], ends[1])
        for number in signals { _ = peersync_forward_signal(number, ends[1]) }
        let (readEnd, continuation) = (ends[0], continuation)
        let thread = Thread {
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) == 1, byte != 0 {
                continuation.yield(UnixSignals.name(of: Int32(byte)))
            }
            continuation.finish()
        }
        thread.name = "peersync-signals"
        thread.start()
    }

    public func makeAsyncIterator() -> AsyncStream<String>.AsyncIterator { stream.makeAsyncIterator() }

    /// Ends the sequence. The signals stay caught (a second SIGTERM during
    /// shutdown does not kill the process); their names are dropped.
    public func finish() {
        guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var zero: UInt8 = 0
        _ = write(pipeEnds.write, &zero, 1)
    }

    /// `TERM` for SIGTERM, `INT` for SIGINT, else the number.
    static func name(of number: Int32) -> String {
        switch number {
        case SIGTERM: "TERM"
        case SIGINT: "INT"
        case SIGHUP: "HUP"
        case SIGQUIT: "QUIT"
        default: "\(number)"
        }
    }
}
