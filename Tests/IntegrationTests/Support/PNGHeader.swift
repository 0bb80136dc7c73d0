import Foundation

/// The size a PNG file says it has: the width and height of its IHDR chunk,
/// which comes first after the 8-byte signature.
struct PNGHeader: Equatable {
    var width: Int
    var height: Int

    /// Reads the header of `data`; nil when it is not a PNG.
    init?(_ data: Data) {
        let bytes = [UInt8](data.prefix(24))
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count == 24, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else {
            return nil
        }
        func bigEndian(_ offset: Int) -> Int { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        width = bigEndian(16)
        height = bigEndian(20)
    }

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}
