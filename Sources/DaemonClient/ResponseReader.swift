import Foundation
import PeerNet

/// Reads an HTTP/1.1 response from a socket incrementally: the head, then
/// the body with `Content-Length`, chunked encoding, or up to the close.
struct ResponseReader {
    struct Head {
        var status: Int
        var headers: [String: String]
    }

    let socket: Socket
    private var buffer: [UInt8] = []
    private var remainingLength: Int?
    private var finished = false

    init(socket: Socket) {
        self.socket = socket
    }

    mutating func head() throws -> Head {
        let end = try readUntil([13, 10, 13, 10])
        let text = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeSubrange(..<(end + 4))
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw DaemonClientError("the daemon sent a malformed HTTP status line")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        remainingLength = headers["content-length"].flatMap(Int.init)
        return Head(status: status, headers: headers)
    }

    /// The next piece of the body, nil at its end.
    mutating func bodyChunk(_ head: Head) throws -> [UInt8]? {
        if finished { return nil }
        if head.headers["transfer-encoding"]?.lowercased() == "chunked" {
            let lineEnd = try readUntil([13, 10])
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw DaemonClientError("the daemon sent a malformed chunk")
            }
            buffer.removeSubrange(..<(lineEnd + 2))
            try fill(size + 2)
            let chunk = Array(buffer[..<size])
            buffer.removeSubrange(..<(size + 2))
            if size == 0 { finished = true }
            return size == 0 ? nil : chunk
        }
        if let remaining = remainingLength {
            if remaining == 0 {
                finished = true
                return nil
            }
            if buffer.isEmpty { try receive() }
            let take = min(remaining, buffer.count)
            let chunk = Array(buffer[..<take])
            buffer.removeSubrange(..<take)
            remainingLength = remaining - take
            return chunk
        }
        if buffer.isEmpty, try !receive() {
            finished = true
            return nil
        }
        defer { buffer = [] }
        return buffer
    }

    private mutating func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count)
                where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffer.count - marker.count + 1
            }
            guard try receive() else { throw DaemonClientError("the daemon closed the connection mid-response") }
        }
    }

    private mutating func fill(_ count: Int) throws {
        while buffer.count < count {
            guard try receive() else { throw DaemonClientError("the daemon closed the connection mid-response") }
        }
    }

    /// Appends what the socket has; false at the end of the stream.
    @discardableResult
    private mutating func receive() throws -> Bool {
        let bytes: [UInt8]
        do {
            bytes = try socket.receive()
        } catch {
            throw DaemonClientError("reading from the daemon failed: \(error)")
        }
        buffer += bytes
        return !bytes.isEmpty
    }
}
