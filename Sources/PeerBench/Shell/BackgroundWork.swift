import Foundation
import Synchronization

/// Work that runs on a thread of its own (blocking socket loops stay off
/// Swift's cooperative pool) while the caller does something else; the
/// caller then waits for its result with a deadline.
final class BackgroundWork<Value: Sendable>: Sendable {
    private let result = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    init(_ name: String, _ body: @escaping @Sendable () -> Value) {
        let thread = Thread { [self] in
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// True once the work returned.
    var isFinished: Bool { result.withLock { $0 != nil } }

    /// The result, waiting up to `seconds` for it; nil when the work is not done by then.
    func wait(seconds: Double) -> Value? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        done.signal()
        return result.withLock { $0 }
    }
}

/// A flag one thread raises and another polls between steps.
final class StopFlag: Sendable {
    private let raised = Mutex(false)

    /// Asks the work to stop after its current step.
    func raise() { raised.withLock { $0 = true } }

    /// True once `raise` was called.
    var isRaised: Bool { raised.withLock { $0 } }
}
