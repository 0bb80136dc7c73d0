/// Cuts a byte stream into frames.
///
/// Pure and incremental: feed it whatever `recv` returned, take the whole
/// frames out. It throws, and stays failed, on a length of zero, a length over
/// the limit, or an unknown type byte, so a peer cannot make it buffer more
/// than one maximum-size frame.
///
/// ```swift
/// var decoder = FrameDecoder()
/// decoder.append(received)
/// while let frame = try decoder.next() { handle(frame) }
/// ```
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: WireError?
    /// The largest frame accepted (type byte and body). A shell raises it
    /// once the handshake is done; bytes already buffered are judged by
    /// the limit in force when their frame is taken out.
    public var maximumSize: Int

    public init(maximumSize: Int = Frame.maximumSize) {
        self.maximumSize = maximumSize
    }

    /// Bytes received and not yet returned as a frame.
    public var bufferedCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or `nil` until one has arrived.
    public mutating func next() throws -> Frame? {
        if let failure { throw failure }
        guard bufferedCount >= 4 else { return nil }
        let length =
            Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8
            | Int(buffer[start + 3])
        guard length >= 1 else { return try fail(.emptyFrame) }
        guard length <= maximumSize else { return try fail(.frameTooLarge(length, limit: maximumSize)) }
        guard bufferedCount >= 4 + length else { return nil }
        let typeByte = buffer[start + 4]
        guard let type = Frame.Kind(rawValue: typeByte) else { return try fail(.unknownFrameType(typeByte)) }
        let body = Array(buffer[(start + 5)..<(start + 4 + length)])
        start += 4 + length
        if start > 1 << 16 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return Frame(type: type, body: body)
    }

    private mutating func fail(_ error: WireError) throws -> Frame? {
        failure = error
        throw error
    }
}
