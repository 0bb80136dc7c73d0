import Testing

@testable import SyncProtocol

@Suite struct FrameDecoderTests {
    @Test func aFrameSplitAcrossReadsComesOutWhole() throws {
        let bytes = Frame(type: .sealed, body: Array("hello".utf8)).encoded()
        var decoder = FrameDecoder()
        for byte in bytes.dropLast() {
            decoder.append([byte])
            #expect(try decoder.next() == nil)
        }
        decoder.append([bytes.last!])
        #expect(try decoder.next() == Frame(type: .sealed, body: Array("hello".utf8)))
        #expect(decoder.bufferedCount == 0)
    }

    @Test func severalFramesInOneReadComeOutInOrder() throws {
        let first = Frame(type: .handshakeInit, body: [1, 2, 3])
        let second = Frame(type: .reject, body: [])
        var decoder = FrameDecoder()
        decoder.append(first.encoded() + second.encoded())
        #expect(try decoder.next() == first)
        #expect(try decoder.next() == second)
        #expect(try decoder.next() == nil)
    }

    @Test func anOversizedLengthIsRefusedBeforeItsBodyArrives() {
        var decoder = FrameDecoder(maximumSize: 1024)
        decoder.append([0, 0, 0x04, 0x01, 5])
        #expect(throws: WireError.frameTooLarge(1025, limit: 1024)) { try decoder.next() }
    }

    @Test func aZeroLengthIsRefused() {
        var decoder = FrameDecoder()
        decoder.append([0, 0, 0, 0])
        #expect(throws: WireError.emptyFrame) { try decoder.next() }
    }

    @Test func anUnknownTypeByteIsRefusedAndTheDecoderStaysFailed() {
        var decoder = FrameDecoder()
        decoder.append([0, 0, 0, 1, 0xEE])
        #expect(throws: WireError.unknownFrameType(0xEE)) { try decoder.next() }
        decoder.append(Frame(type: .sealed, body: []).encoded())
        #expect(throws: WireError.unknownFrameType(0xEE)) { try decoder.next() }
    }

    @Test func randomGarbageNeverCrashesTheDecoder() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var decoder = FrameDecoder(maximumSize: 4096)
            decoder.append((0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255) })
            while (try? decoder.next()) ?? nil != nil {}
            #expect(decoder.bufferedCount <= 64)
        }
    }
}
