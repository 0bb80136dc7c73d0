import PeerNet

/// One Server-Sent Event: its `id`, `event` name and `data`.
public struct ServerSentEvent: Sendable, Hashable {
    public var id: String?
    public var event: String?
    public var data: String
}

/// The change stream of a daemon (`GET /changes`), read event by event.
/// Comment lines (keepalives) are skipped.
///
/// `@unchecked Sendable`: one reader at a time; it may be handed to the thread
/// that reads it, and `reader` and `pending` are touched by that reader only.
public final class EventStream: @unchecked Sendable {
    /// The response status; 200 when the stream is open.
    public let status: Int
    private var reader: ResponseReader
    private let head: ResponseReader.Head
    private var pending: [UInt8] = []

    init(reader: ResponseReader) throws {
        self.reader = reader
        head = try self.reader.head()
        status = head.status
    }

    /// The next event, blocking until it comes; nil when the stream ends.
    public func next() throws -> ServerSentEvent? {
        while true {
            if let end = blankLine() {
                let block = String(decoding: pending[..<end.start], as: UTF8.self)
                pending.removeSubrange(..<end.end)
                if let event = Self.parse(block) { return event }
                continue
            }
            guard let chunk = try reader.bodyChunk(head) else { return nil }
            pending += chunk
        }
    }

    /// Closes the connection.
    public func close() {
        reader.socket.shutdown()
    }

    private func blankLine() -> (start: Int, end: Int)? {
        guard pending.count >= 2 else { return nil }
        for index in 0..<(pending.count - 1) where pending[index] == 10 && pending[index + 1] == 10 {
            return (index, index + 2)
        }
        return nil
    }

    private static func parse(_ block: String) -> ServerSentEvent? {
        var event = ServerSentEvent(id: nil, event: nil, data: "")
        var dataLines: [String] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") { continue }
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? String(parts[1].drop { $0 == " " }) : ""
            switch parts[0] {
            case "id": event.id = value
            case "event": event.event = value
            case "data": dataLines.append(value)
            default: continue
            }
        }
        guard event.id != nil || event.event != nil || !dataLines.isEmpty else { return nil }
        event.data = dataLines.joined(separator: "\n")
        return event
    }
}
