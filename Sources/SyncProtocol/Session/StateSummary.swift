import Replica

/// A SHA-256 over a replica's projections (`EventLog.stateHash()`), kept as
/// its 32 bytes: the `state` message carries them raw.
///
/// ```swift
/// let hash = StateHash(hex: try log.stateHash())!
/// hash.hex == (try log.stateHash())  // true
/// ```
public struct StateHash: Hashable, Sendable, CustomStringConvertible {
    /// Always 32 bytes.
    public let bytes: [UInt8]

    /// Nil unless `bytes` holds exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// Reads 64 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = StateHash.nibble(digits[index]), let low = StateHash.nibble(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits, as `EventLog.stateHash()` prints them.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// What the `state` message says: how many events a replica holds and the
/// hash of its projections. Two replicas with equal cursors and equal
/// summaries hold the same events and the same state.
public struct StateSummary: Hashable, Sendable {
    /// `EventLog.eventCount()`.
    public var eventCount: Int64
    public var hash: StateHash

    public init(eventCount: Int64, hash: StateHash) {
        self.eventCount = eventCount
        self.hash = hash
    }
}

/// A state summary together with the cursor it describes.
///
/// For this node's own summary the cursor is the one read with it. For a
/// peer's, it is the peer's cursor as its cursor messages had reported it
/// when the `state` message arrived: a sender sends `state` only right
/// after a cursor message, with no change in between (docs/protocol.md).
public struct StateReport: Hashable, Sendable {
    public var summary: StateSummary
    public var cursor: VectorCursor

    public init(summary: StateSummary, cursor: VectorCursor) {
        self.summary = summary
        self.cursor = cursor
    }
}
