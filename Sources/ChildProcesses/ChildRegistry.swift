import Foundation
import Synchronization

/// The process ids of every child still running, killed with SIGKILL when
/// this process exits (`exit`, or the end of `main`), so that no child
/// outlives a run that ended early: a failed test, an interrupted demo.
final class ChildRegistry: Sendable {
    static let shared = ChildRegistry()
    private let pids = Mutex(Set<Int32>())

    private init() {
        atexit {
            for pid in ChildRegistry.shared.pids.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
    }

    func insert(_ pid: Int32) { pids.withLock { _ = $0.insert(pid) } }

    func remove(_ pid: Int32) { pids.withLock { _ = $0.remove(pid) } }
}
