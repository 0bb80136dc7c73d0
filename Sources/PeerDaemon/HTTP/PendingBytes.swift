/// Bytes waiting to be sent, handed out in slices of at most a given size:
/// a stream's rendered text, or what the server pulled from a stream.
struct PendingBytes {
    private var bytes: [UInt8] = []
    private var start = 0

    var isEmpty: Bool { start == bytes.count }

    mutating func append(_ text: String) {
        append(bytes: Array(text.utf8))
    }

    mutating func append(bytes more: [UInt8]) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        bytes += more
    }

    mutating func take(_ maximum: Int) -> [UInt8] {
        let end = min(bytes.count, start + maximum)
        defer { start = end }
        return Array(bytes[start..<end])
    }

    /// Copies at most `maximum` bytes to `destination` and returns how many.
    mutating func take(into destination: UnsafeMutableRawPointer, maximum: Int) -> Int {
        let end = min(bytes.count, start + maximum)
        let count = end - start
        bytes.withUnsafeBytes { source in
            destination.copyMemory(from: source.baseAddress! + start, byteCount: count)
        }
        start = end
        return count
    }
}
