import CZstd

/// One-shot zstd (RFC 8878) for the wire: batches are compressed as one
/// frame that declares its content size, and a frame from a peer is opened
/// only into a buffer of that declared size, which must not exceed a hard
/// limit. So a forged frame can make the receiver allocate at most `limit`
/// bytes, and is refused before any allocation when it declares more.
enum Zstd {
    /// `ZSTD_CONTENTSIZE_UNKNOWN` (`0ULL - 1`): the frame header has no size.
    private static let contentSizeUnknown = UInt64.max
    /// `ZSTD_CONTENTSIZE_ERROR` (`0ULL - 2`): not a zstd frame header.
    private static let contentSizeError = UInt64.max - 1

    /// `prefix` followed by `input` as one zstd frame at `level`, with the
    /// content size in its header and no checksum (the sealed frame's tag
    /// already authenticates every byte).
    static func compress(_ input: [UInt8], level: Int32, prefix: UInt8) -> [UInt8] {
        let bound = ZSTD_compressBound(input.count)
        return [UInt8](unsafeUninitializedCapacity: 1 + bound) { buffer, initialized in
            buffer[0] = prefix
            let written = input.withUnsafeBytes { source in
                ZSTD_compress(buffer.baseAddress! + 1, bound, source.baseAddress, source.count, level)
            }
            // Only a bad level or a too small buffer fails, and neither can happen here.
            precondition(ZSTD_isError(written) == 0, "ZSTD_compress: \(String(cString: ZSTD_getErrorName(written)))")
            initialized = 1 + written
        }
    }

    /// The content of the one zstd frame `input` holds, at most `limit`
    /// bytes. Throws `WireError.malformed` for anything else: not a frame,
    /// no declared content size, a declared size over `limit`, bytes after
    /// the frame, a corrupt frame, or content of another size than declared.
    static func decompress(_ input: ArraySlice<UInt8>, limit: Int) throws -> [UInt8] {
        try input.withUnsafeBytes { source -> [UInt8] in
            let declared = ZSTD_getFrameContentSize(source.baseAddress, source.count)
            guard declared != contentSizeError else {
                throw WireError.malformed("compressed body is not a zstd frame")
            }
            guard declared != contentSizeUnknown else {
                throw WireError.malformed("compressed body does not declare its decompressed size")
            }
            guard declared <= UInt64(limit) else {
                throw WireError.malformed("compressed body declares \(declared) bytes, over the limit of \(limit)")
            }
            let frameSize = ZSTD_findFrameCompressedSize(source.baseAddress, source.count)
            guard ZSTD_isError(frameSize) == 0, frameSize == source.count else {
                throw WireError.malformed("compressed body is not exactly one zstd frame")
            }
            let count = Int(declared)
            var failure: WireError?
            let content = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                let produced = ZSTD_decompress(buffer.baseAddress, count, source.baseAddress, source.count)
                if ZSTD_isError(produced) != 0 {
                    failure = .malformed("corrupt zstd frame: \(String(cString: ZSTD_getErrorName(produced)))")
                } else if produced != count {
                    failure = .malformed("zstd frame holds \(produced) bytes, declared \(count)")
                } else {
                    initialized = count
                    return
                }
                // Zero-filled so the array is initialized; it is dropped.
                if count > 0 { buffer.baseAddress!.initialize(repeating: 0, count: count) }
                initialized = count
            }
            if let failure { throw failure }
            return content
        }
    }
}
