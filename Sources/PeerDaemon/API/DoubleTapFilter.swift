import Foundation
import Replica

/// Treats an identical write for the same entity within `windowMs` as one
/// rapid double tap: the second gets the first one's stored event.
///
/// `@unchecked Sendable`: `recent` is only touched with `lock` held.
final class DoubleTapFilter: @unchecked Sendable {
    private let windowMs: Int64
    private let clock: @Sendable () -> Int64
    private let lock = NSLock()
    private var recent: [String: (atMs: Int64, stored: StoredEvent)] = [:]

    /// `windowMs` 0 turns the filter off.
    init(windowMs: Int64, clock: @escaping @Sendable () -> Int64 = DoubleTapFilter.monotonicMs) {
        self.windowMs = windowMs
        self.clock = clock
    }

    /// The event an identical write (`key`: entity and payload) stored
    /// within the window, else what `write` stores. Writes of one key are
    /// serialized, so two taps racing each other still store one event.
    func write(key: String, _ write: () throws -> StoredEvent) rethrows -> StoredEvent {
        guard windowMs > 0 else { return try write() }
        return try lock.withLock {
            let now = clock()
            recent = recent.filter { now - $0.value.atMs < windowMs }
            if let earlier = recent[key] { return earlier.stored }
            let stored = try write()
            recent[key] = (now, stored)
            return stored
        }
    }

    @Sendable static func monotonicMs() -> Int64 {
        Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000)
    }
}
