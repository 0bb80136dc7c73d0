import CLinux
import Glibc
import Synchronization

/// One thread that waits on many descriptors at once (`epoll`) and runs
/// timers: the network shell's home. Every socket, every connection's state
/// and every timer is touched on this thread only; other threads hand work
/// over with `execute`, which wakes the loop through an `eventfd`.
///
/// ```swift
/// let loop = try EventLoop(name: "peersync-gossip")
/// loop.start()
/// loop.execute {
///     try? loop.watch(socket.descriptor, for: .readable) { readiness in … }
///     loop.schedule(after: 10_000) { … }   // ms on `loop.now`
/// }
/// loop.stop()   // from any other thread: returns once the thread has ended
/// ```
///
/// `@unchecked Sendable`: the descriptor table, the timers and `running` are
/// touched on the loop thread only (`watch`, `schedule` and friends say so
/// and check it); `submitted` is guarded by its mutex.
public final class EventLoop: @unchecked Sendable {
    /// What a descriptor is ready for, or why it is not.
    public struct Readiness: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let readable = Readiness(rawValue: UInt32(peersync_epollin))
        public static let writable = Readiness(rawValue: UInt32(peersync_epollout))
        /// The peer closed or the descriptor failed; reading tells which.
        public static let hangUp = Readiness(rawValue: UInt32(peersync_epollhangup))
    }

    /// A timer, to cancel it.
    public struct TimerID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    public typealias Handler = (Readiness) -> Void

    public let name: String
    private let epoll: Int32
    private let wakeup: Int32
    /// Work handed over, and whether the loop has taken its last batch.
    private let submitted = Mutex<(work: [@Sendable () -> Void], closed: Bool)>(([], false))
    private var handlers: [Int32: Handler] = [:]
    private var timers = TimerQueue()
    private var thread: pthread_t?
    private let threadID = Atomic<UInt64>(0)
    private let stopping = Atomic<Bool>(false)
    private let origin: UInt64

    public init(name: String) throws {
        self.name = name
        epoll = try systemCall("epoll_create1") { peersync_epoll_create() }
        do {
            wakeup = try systemCall("eventfd") { peersync_eventfd() }
        } catch {
            close(epoll)
            throw error
        }
        origin = EventLoop.monotonicNanoseconds()
        _ = peersync_epoll_add(epoll, wakeup, Readiness.readable.rawValue)
    }

    deinit {
        close(wakeup)
        close(epoll)
    }

    /// Milliseconds on the loop's monotonic clock (0 when it was made).
    public var now: Int64 { Int64((EventLoop.monotonicNanoseconds() - origin) / 1_000_000) }

    /// True on the loop's own thread.
    public var inLoop: Bool {
        let id = threadID.load(ordering: .acquiring)
        return id != 0 && UInt64(pthread_self()) == id
    }

    /// Starts the loop's thread.
    public func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var created = pthread_t()
        let status = pthread_create(
            &created, nil,
            { context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
                loop.run()
                return nil
            }, box)
        precondition(status == 0, "\(name): pthread_create failed with \(status)")
        thread = created
    }

    /// Ends the loop after the work already handed over, and waits for its
    /// thread. Call from another thread; later `execute`s are dropped.
    public func stop() {
        precondition(!inLoop, "\(name): stop() from the loop's own thread would wait for itself")
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        signalWakeup()
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    /// Runs `work` on the loop thread, after the work handed over before it.
    /// Returns false, and drops `work`, once the loop has stopped.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wasEmpty) = submitted.withLock { queue -> (Bool, Bool) in
            guard !queue.closed else { return (false, false) }
            queue.work.append(work)
            return (true, queue.work.count == 1)
        }
        if wasEmpty { signalWakeup() }
        return accepted
    }

    /// Calls `handler` on the loop thread whenever `descriptor` is ready for
    /// `interest` (level-triggered: again until it is read or written).
    public func watch(_ descriptor: Int32, for interest: Readiness, handler: @escaping Handler) throws {
        precondition(inLoop, "\(name): watch() off the loop thread")
        try systemCall("epoll_ctl add") { peersync_epoll_add(epoll, descriptor, interest.rawValue) }
        handlers[descriptor] = handler
    }

    /// Changes what a watched descriptor waits for (`[]`: nothing, for now).
    public func rewatch(_ descriptor: Int32, for interest: Readiness) {
        precondition(inLoop, "\(name): rewatch() off the loop thread")
        _ = peersync_epoll_modify(epoll, descriptor, interest.rawValue)
    }

    /// Stops watching a descriptor; call before closing it.
    public func unwatch(_ descriptor: Int32) {
        precondition(inLoop, "\(name): unwatch() off the loop thread")
        guard handlers.removeValue(forKey: descriptor) != nil else { return }
        _ = peersync_epoll_remove(epoll, descriptor)
    }

    /// Runs `work` on the loop thread once `now` reaches `deadline`.
    @discardableResult
    public func schedule(at deadline: Int64, _ work: @escaping () -> Void) -> TimerID {
        precondition(inLoop, "\(name): schedule() off the loop thread")
        return TimerID(value: timers.add(at: deadline, work))
    }

    /// Runs `work` on the loop thread `milliseconds` from now.
    @discardableResult
    public func schedule(after milliseconds: Int64, _ work: @escaping () -> Void) -> TimerID {
        schedule(at: now + milliseconds, work)
    }

    /// A timer that has not fired yet never will.
    public func cancel(_ timer: TimerID) {
        precondition(inLoop, "\(name): cancel() off the loop thread")
        timers.cancel(timer.value)
    }

    // MARK: - The loop thread

    private func run() {
        threadID.store(UInt64(pthread_self()), ordering: .releasing)
        var descriptors = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        while !stopping.load(ordering: .acquiring) {
            runSubmitted()
            runDueTimers()
            let timeout = timers.nextDeadline.map { Int32(clamping: max(0, $0 - now)) } ?? -1
            let count = peersync_epoll_wait(epoll, &descriptors, &events, Int32(descriptors.count), timeout)
            guard count > 0 else { continue }  // a timeout, or EINTR
            for index in 0..<Int(count) {
                let descriptor = descriptors[index]
                if descriptor == wakeup {
                    drainWakeup()
                    continue
                }
                // A handler may unwatch another descriptor of this batch.
                handlers[descriptor]?(Readiness(rawValue: events[index]))
            }
        }
        runSubmitted(last: true)
    }

    /// Runs the work handed over; the last time, later `execute`s are refused.
    private func runSubmitted(last: Bool = false) {
        while true {
            let batch = submitted.withLock { queue -> [@Sendable () -> Void] in
                defer { queue.work.removeAll(keepingCapacity: true) }
                if last && queue.work.isEmpty { queue.closed = true }
                return queue.work
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }

    private func runDueTimers() {
        while let work = timers.popDue(now: now) { work() }
    }

    private func signalWakeup() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    private func drainWakeup() {
        var value: UInt64 = 0
        _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// The loop's timers: a binary heap by deadline (then by order of adding),
/// with cancelled ones dropped when they reach the top.
struct TimerQueue {
    private struct Entry {
        var deadline: Int64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var work: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    var nextDeadline: Int64? {
        mutating get {
            dropCancelled()
            return heap.first?.deadline
        }
    }

    mutating func add(at deadline: Int64, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextID
        nextID += 1
        work[id] = body
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return id
    }

    mutating func cancel(_ id: UInt64) {
        work[id] = nil
    }

    /// The work of the earliest timer due at `now`, removed.
    mutating func popDue(now: Int64) -> (() -> Void)? {
        dropCancelled()
        guard let top = heap.first, top.deadline <= now else { return nil }
        removeTop()
        return work.removeValue(forKey: top.id)
    }

    private mutating func dropCancelled() {
        while let top = heap.first, work[top.id] == nil { removeTop() }
    }

    private mutating func removeTop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private func precedes(_ a: Entry, _ b: Entry) -> Bool { (a.deadline, a.id) < (b.deadline, b.id) }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && precedes(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count && precedes(heap[right], heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
