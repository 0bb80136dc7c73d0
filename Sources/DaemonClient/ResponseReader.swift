import Foundation
import Glibc
import PeerNet

/// Reads an HTTP/1.1 response from a socket incrementally: the head, then
/// the body with `Content-Length`, chunked encoding, or up to the close.
///
/// A body that ends early throws: a chunked one closed before its
/// terminating zero-length chunk (the daemon ends a streamed response that
/// fails midway that way), or one with `Content-Length` closed before that
/// many bytes. Only a body without either ends at the close.
struct ResponseReader {
    struct Head {
        var status: Int
        var headers: [String: String]

        var isChunked: Bool { headers["transfer-encoding"]?.lowercased() == "chunked" }
    }

    let socket: Socket
    private var buffer: [UInt8] = []
    private var remainingLength: Int?
    private var finished = false
    /// Body bytes handed out so far, for the error of a body cut off.
    private var bodyBytes = 0

    init(socket: Socket) {
        self.socket = socket
    }

    mutating func head() throws -> Head {
        guard let end = try readUntil([13, 10, 13, 10]) else {
            throw DaemonClientError("the daemon closed the connection before its response was complete")
        }
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

    /// Whether a reply arrived, for when sending the request failed: the
    /// daemon may refuse a request before its body is all sent (413), and
    /// close. Reads what the socket has.
    mutating func hasReply() -> Bool {
        let received = (try? receive()) ?? false
        return received || !buffer.isEmpty
    }

    /// The next piece of the body, nil at its end.
    mutating func bodyChunk(_ head: Head) throws -> [UInt8]? {
        if finished { return nil }
        let chunk: [UInt8]?
        if head.isChunked {
            chunk = try nextChunk()
        } else if let remaining = remainingLength {
            chunk = try nextSlice(remaining: remaining)
        } else {
            if buffer.isEmpty, try !receive() {
                finished = true
                return nil
            }
            defer { buffer = [] }
            chunk = buffer
        }
        bodyBytes += chunk?.count ?? 0
        return chunk
    }

    /// One chunk of a chunked body; nil after the terminating one.
    private mutating func nextChunk() throws -> [UInt8]? {
        guard let lineEnd = try readUntil([13, 10]) else { throw cutOff("before its terminating chunk") }
        let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
        guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
            throw DaemonClientError("the daemon sent a malformed chunk")
        }
        buffer.removeSubrange(..<(lineEnd + 2))
        guard try fill(size + 2) else { throw cutOff("in a chunk of \(size) bytes") }
        let chunk = Array(buffer[..<size])
        buffer.removeSubrange(..<(size + 2))
        if size == 0 {
            finished = true
            return nil
        }
        return chunk
    }

    /// The next bytes of a body with `Content-Length`; nil once all came.
    private mutating func nextSlice(remaining: Int) throws -> [UInt8]? {
        if remaining == 0 {
            finished = true
            return nil
        }
        if buffer.isEmpty, try !receive() { throw cutOff("\(remaining) bytes short of its Content-Length") }
        let take = min(remaining, buffer.count)
        let slice = Array(buffer[..<take])
        buffer.removeSubrange(..<take)
        remainingLength = remaining - take
        return slice
    }

    private func cutOff(_ detail: String) -> DaemonClientError {
        DaemonClientError(
            "the daemon's response was cut off after \(bodyBytes) bytes of body, \(detail): the daemon closed "
                + "the connection early (it failed while sending, or stopped), so what arrived is incomplete")
    }

    /// Where `marker` starts in the buffer, reading until it is there; nil
    /// when the connection ends first.
    private mutating func readUntil(_ marker: [UInt8]) throws -> Int? {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count)
                where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffer.count - marker.count + 1
            }
            guard try receive() else { return nil }
        }
    }

    /// Reads until `count` bytes are buffered; false when the connection ends first.
    private mutating func fill(_ count: Int) throws -> Bool {
        while buffer.count < count {
            guard try receive() else { return false }
        }
        return true
    }

    /// Appends what the socket has; false at the end of the stream, which a
    /// reset (the daemon closed with unread input) is too.
    private mutating func receive() throws -> Bool {
        let bytes: [UInt8]
        do {
            bytes = try socket.receive()
        } catch let error as SocketError where error.code == ECONNRESET {
            return false
        } catch {
            throw DaemonClientError("reading from the daemon failed: \(error)")
        }
        buffer += bytes
        return !bytes.isEmpty
    }
}
