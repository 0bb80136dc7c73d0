import Foundation

/// Decodes an HTTP/1.1 `Transfer-Encoding: chunked` body as it arrives:
/// a pure decoder that takes what it can from the front of a buffer.
///
/// ```swift
/// var decoder = ChunkedBody()
/// var buffer = Array("5\r\nhello\r\n0\r\n\r\n".utf8)
/// let data = try decoder.decode(&buffer)  // "hello"; decoder.finished
/// ```
struct ChunkedBody {
    private enum State {
        /// Expecting a chunk-size line.
        case size
        /// Inside a chunk, this many data bytes still to come.
        case data(Int)
        /// Expecting the CRLF that ends a chunk's data.
        case dataEnd
        /// The last chunk was read (trailers are ignored).
        case finished
    }

    private var state = State.size

    /// True once the zero-size chunk was read.
    var finished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Removes every complete piece from the front of `buffer` and returns
    /// the body bytes among them; throws on a malformed chunk header.
    mutating func decode(_ buffer: inout [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var position = 0
        loop: while position < buffer.count {
            switch state {
            case .size:
                guard let lineEnd = ChunkedBody.lineEnd(in: buffer, from: position) else { break loop }
                let line = String(decoding: buffer[position..<lineEnd], as: UTF8.self)
                let digits = line.split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(digits.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    throw ProbeError.malformed("chunk size line \"\(line.prefix(40))\"")
                }
                position = lineEnd + 2
                state = size == 0 ? .finished : .data(size)
            case .data(let remaining):
                let take = min(remaining, buffer.count - position)
                output += buffer[position..<(position + take)]
                position += take
                state = take == remaining ? .dataEnd : .data(remaining - take)
            case .dataEnd:
                guard buffer.count - position >= 2 else { break loop }
                position += 2
                state = .size
            case .finished:
                position = buffer.count
            }
        }
        buffer.removeFirst(position)
        return output
    }

    /// The index of the next CRLF at or after `start`.
    static func lineEnd(in buffer: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < buffer.count {
            if buffer[index] == 13 && buffer[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }
}
