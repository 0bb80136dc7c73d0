/// The simulator's agenda: things that happen at a virtual time, taken in
/// order of time and, at one time, in the order they were scheduled. That
/// second key is what makes a run independent of the heap's internals.
///
/// ```swift
/// var queue = EventQueue<String>()
/// queue.schedule("b", at: 10)
/// queue.schedule("a", at: 5)
/// queue.next()  // (5, "a")
/// ```
public struct EventQueue<Element> {
    private struct Entry {
        var time: Int64
        var sequence: UInt64
        var element: Element

        func precedes(_ other: Entry) -> Bool {
            (time, sequence) < (other.time, other.sequence)
        }
    }

    private var heap: [Entry] = []
    private var scheduled: UInt64 = 0

    public init() {}

    public var isEmpty: Bool { heap.isEmpty }
    public var count: Int { heap.count }

    /// When the next element is due, if any.
    public var nextTime: Int64? { heap.first?.time }

    public mutating func schedule(_ element: Element, at time: Int64) {
        heap.append(Entry(time: time, sequence: scheduled, element: element))
        scheduled += 1
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest element.
    public mutating func next() -> (time: Int64, element: Element)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (first.time, first.element)
    }
}
