import Foundation
import TestSupport
import Testing

@testable import Replica

/// The SHA-256 wrapper over libsodium against the FIPS 180-4 vectors and the
/// system's sha256sum: the state hash is defined as SHA-256, byte for byte.
@Suite("SHA-256")
struct SHA256Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(bytes)
        return hash.finalizeHex()
    }

    @Test("The empty message hashes to the FIPS vector")
    func emptyMessage() {
        #expect(hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("\"abc\" hashes to the FIPS vector")
    func abc() {
        var hash = SHA256()
        hash.update("abc")
        #expect(hash.finalizeHex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("The 448-bit two-block message hashes to the FIPS vector")
    func twoBlockMessage() {
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(hex(Array(message.utf8)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("One million 'a' hash to the FIPS vector")
    func oneMillionA() {
        #expect(
            hex([UInt8](repeating: 0x61, count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("Feeding the message in pieces gives the same digest as all at once")
    func incrementalUpdatesMatch() {
        let message = Array("The quick brown fox jumps over the lazy dog, again and again and again.".utf8)
        var pieces = SHA256()
        var start = 0
        for size in [1, 0, 7, 63, 64, 3] where start < message.count {
            let end = min(start + size, message.count)
            pieces.update(message[start..<end])
            start = end
        }
        pieces.update(message[start...])
        #expect(pieces.finalizeHex() == hex(message))
    }

    @Test("Bytes in a raw buffer, an array slice and a string hash alike, and finalize starts over")
    func everyInputFormHashesAlike() {
        let text = "The quick brown fox jumps over the lazy dog"
        let bytes = Array(text.utf8)
        var fromBuffer = SHA256()
        bytes.withUnsafeBytes { fromBuffer.update($0) }
        var fromSlice = SHA256()
        fromSlice.update(bytes[...])
        var fromText = SHA256()
        fromText.update(text)
        let expected = "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"
        #expect(fromBuffer.finalizeHex() == expected)
        #expect(fromSlice.finalizeHex() == expected)
        #expect(fromText.finalizeHex() == expected)
        // After finalize the value is a fresh, empty hash again.
        #expect(fromText.finalizeHex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("A copy carries on independently of the original")
    func copiesAreIndependent() {
        var first = SHA256()
        first.update("ab")
        var second = first
        first.update("c")
        second.update("d")
        #expect(first.finalizeHex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(second.finalizeHex() == "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9")
    }

    @Test("Digests around the block and padding boundaries match sha256sum")
    func paddingBoundariesMatchSha256sum() throws {
        let directory = try TemporaryDirectory()
        let lengths = [1, 55, 56, 57, 63, 64, 65, 111, 112, 119, 120, 127, 128, 129, 1_000]
        var rng = SplitMix64(seed: 256)
        var expected: [String: String] = [:]
        for length in lengths {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let path = directory.path("m\(length)")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            expected[path] = hex(bytes)
        }

        let output = try Self.run("/usr/bin/sha256sum", lengths.map { directory.path("m\($0)") })
        var checked = 0
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1)
            let path = String(fields[1].drop { $0 == " " || $0 == "*" })
            #expect(expected[path] == String(fields[0]), "length of \(path)")
            checked += 1
        }
        #expect(checked == lengths.count)
    }

    /// Runs a tool and returns its standard output.
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
