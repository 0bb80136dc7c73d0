import Foundation
import Synchronization
import TestSupport
import Testing

/// What `/proc/PID` says about a process: its thread and descriptor counts.
enum ProcessCensus {
    /// `Threads:` of `/proc/PID/status`.
    static func threads(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
        return try #require(line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) })
    }

    /// Entries of `/proc/PID/fd`: the process's open descriptors.
    static func descriptors(_ pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }
}

/// An HTTP response read off a raw connection to its end.
struct RawReply {
    var status: Int?
    var head: String
    var body: [UInt8]

    init(_ bytes: [UInt8]) {
        let separator = Array("\r\n\r\n".utf8)
        let end = (0..<max(0, bytes.count - 3)).first { bytes[$0..<($0 + 4)].elementsEqual(separator) }
        head = String(decoding: bytes[..<(end ?? bytes.count)], as: UTF8.self)
        body = end.map { Array(bytes[($0 + 4)...]) } ?? []
        let statusLine = head.prefix { $0 != "\r" }.split(separator: " ")
        status = statusLine.count >= 2 ? Int(statusLine[1]) : nil
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// A chunked body decoded: the data of its chunks, and whether it ends
    /// with the terminating zero-length chunk.
    var chunks: (data: [UInt8], terminated: Bool) {
        var data: [UInt8] = []
        var rest = body[...]
        while let lineEnd = rest.indices.dropLast().first(where: { rest[$0] == 13 && rest[$0 + 1] == 10 }),
            let size = Int(String(decoding: rest[..<lineEnd], as: UTF8.self), radix: 16)
        {
            let start = lineEnd + 2
            guard rest.endIndex >= start + size + 2 else { break }
            if size == 0 { return (data, true) }
            data += rest[start..<(start + size)]
            rest = rest[(start + size + 2)...]
        }
        return (data, false)
    }
}

/// How long `body` took, in seconds.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let (whole, fraction) = (ContinuousClock.now - start).components
    return Double(whole) + Double(fraction) / 1e18
}
