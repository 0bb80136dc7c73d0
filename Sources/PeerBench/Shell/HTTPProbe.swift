import DaemonClient
import Foundation
import PeerNet

#if canImport(Glibc)
    import Glibc
#endif

/// Single requests that check what the API does with a malformed or
/// oversized body, reported as the status line the daemon answered.
enum HTTPProbe {
    /// `POST /items` whose name holds the bytes `FF FE` (not UTF-8), with a correct `Content-Length`.
    static func invalidUTF8Name(_ api: DaemonEndpoint) -> String {
        let body = Array(#"{"name":""#.utf8) + [0xFF, 0xFE] + Array(#"","quantity":1}"#.utf8)
        do {
            let answer = try api.request("POST", "/items", bytes: body, timeoutMs: 10_000)
            let code = answerCode(answer).map { " (`\($0)`)" } ?? ""
            return "`\(answer.statusLine)`\(code)"
        } catch {
            return "no answer: \(error)"
        }
    }

    /// `POST /items` with `Transfer-Encoding: chunked`, 64 KiB chunks up to
    /// 8 MiB, sent while watching for an answer: sending stops as soon as
    /// the first response byte arrives or the daemon closes the connection.
    static func chunkedUpload(port: UInt16, totalBytes: Int = 8 << 20, chunkBytes: Int = 64 << 10) -> ChunkedUpload {
        var result = ChunkedUpload()
        do {
            let deadline = ContinuousClock.now + .seconds(60)
            let socket = try Socket.connectedNonBlocking(port: port)
            let head =
                "POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            try socket.sendAll(Array(head.utf8), until: deadline)
            let prefix = Array(String(chunkBytes, radix: 16).utf8) + [13, 10]
            var data = [UInt8](repeating: UInt8(ascii: "a"), count: chunkBytes)
            data.replaceSubrange(0..<9, with: Array(#"{"name":""#.utf8))
            let chunk = prefix + data + [13, 10]
            let chunks = totalBytes / chunkBytes
            var chunksSent = 0
            var pending = chunk[...]
            var scratch = [UInt8](repeating: 0, count: 4096)
            while true {
                let more = chunksSent <= chunks
                let events = socket.wait(for: Int16(POLLIN) | (more ? Int16(POLLOUT) : 0), until: deadline)
                guard events != 0 else {
                    result.answer = "no answer within 60 s"
                    return result
                }
                if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    switch socket.receive(into: &scratch) {
                    case .moved(let count):
                        result.sentAtAnswer = result.sent
                        result.answer = statusLine(scratch[..<count])
                        return result
                    case .wouldBlock: break
                    case .ended:
                        result.answer = "A closed the connection without answering"
                        return result
                    case .failed(let code):
                        result.answer = "A reset the connection without answering (\(ProbeError.text(code)))"
                        return result
                    }
                }
                guard more, events & Int16(POLLOUT) != 0 else { continue }
                switch socket.send(pending) {
                case .moved(let count):
                    let before = chunk.count - pending.count
                    pending.removeFirst(count)
                    let after = chunk.count - pending.count
                    if chunksSent < chunks {
                        result.sent +=
                            dataBytes(upTo: after, prefix: prefix.count, data: chunkBytes)
                            - dataBytes(upTo: before, prefix: prefix.count, data: chunkBytes)
                    }
                    if pending.isEmpty {
                        chunksSent += 1
                        pending = chunksSent < chunks ? chunk[...] : Array("0\r\n\r\n".utf8)[...]
                    }
                case .wouldBlock, .ended: continue
                case .failed(let code):
                    // Sending failed: the answer (if any) is still to be read.
                    guard socket.wait(for: Int16(POLLIN), until: .now + .seconds(2)) != 0,
                        case .moved(let count) = socket.receive(into: &scratch)
                    else {
                        result.answer = "A closed the connection while we sent (\(ProbeError.text(code))), no answer"
                        return result
                    }
                    result.sentAtAnswer = result.sent
                    result.answer = statusLine(scratch[..<count])
                    return result
                }
            }
        } catch {
            result.answer = "no answer: \(error)"
            return result
        }
    }

    /// The first line of an answer, e.g. `` `HTTP/1.1 413 Payload Too Large` ``.
    private static func statusLine(_ bytes: ArraySlice<UInt8>) -> String {
        "`\(String(decoding: bytes.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self))`"
    }

    /// Body bytes among the first `wire` bytes of one encoded chunk.
    private static func dataBytes(upTo wire: Int, prefix: Int, data: Int) -> Int {
        min(max(wire - prefix, 0), data)
    }

    /// The `code` of an `{"error":{"code":…}}` body.
    private static func answerCode(_ answer: HTTPReply) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }
}

/// What the chunked upload probe saw.
struct ChunkedUpload {
    /// The status line, or what happened instead.
    var answer = "—"
    /// Body bytes sent when the first response byte arrived; nil if none did.
    var sentAtAnswer: Int?
    /// Body bytes sent in all.
    var sent = 0
}
