/// The share code: the key as text a person can read out, type or paste.
///
/// `psc1-` then 56 characters of Crockford base32 (lowercase digits and
/// letters without i, l, o, u) in seven dash-separated groups of eight: 52
/// characters carry the 256 key bits (and four zero bits), the last 4 are a
/// 20-bit checksum (BLAKE2b of the key bytes), so a mistyped character is
/// caught with odds of a million to one. Reading is forgiving: case, dashes
/// and white space do not matter, and `o`, `i`, `l` count as `0`, `1`, `1`.
extension ClusterKey {
    /// What every share code starts with: PeerSync cluster, format 1.
    public static let codePrefix = "psc1-"

    /// The share code, e.g.
    /// `psc1-5v3xk2qa-…-7q0gm4rd` (67 characters).
    public var code: String {
        var bytes = secret.exposedBytes
        defer { Sodium.wipe(&bytes) }
        let characters = Array(ClusterCode.encode(bytes) + ClusterCode.checksum(of: secret))
        let groups = stride(from: 0, to: characters.count, by: 8).map {
            String(characters[$0..<min($0 + 8, characters.count)])
        }
        return ClusterKey.codePrefix + groups.joined(separator: "-")
    }

    /// The key a share code holds.
    ///
    /// - Throws: `SecurityError.notAClusterCode` when the text does not have
    ///   the shape of a code, `SecurityError.clusterCodeMistyped` when its
    ///   checksum does not match.
    public init(code: String) throws {
        let text = code.lowercased().filter { !$0.isWhitespace }
        guard text.hasPrefix(ClusterKey.codePrefix) else {
            throw SecurityError.notAClusterCode("it should start with \"\(ClusterKey.codePrefix)\"")
        }
        let body = text.dropFirst(ClusterKey.codePrefix.count).filter { $0 != "-" }
        guard body.count == ClusterCode.length else {
            throw SecurityError.notAClusterCode(
                "it has \(body.count) characters after \"\(ClusterKey.codePrefix)\", not \(ClusterCode.length); "
                    + "was it cut short?")
        }
        var values: [UInt8] = []
        for character in body {
            guard let value = ClusterCode.value(of: character) else {
                throw SecurityError.notAClusterCode("\"\(character)\" cannot appear in a cluster code")
            }
            values.append(value)
        }
        guard var bytes = ClusterCode.decode(values.prefix(ClusterCode.keyLength)) else {
            throw SecurityError.clusterCodeMistyped
        }
        defer { Sodium.wipe(&bytes) }
        let key = try ClusterKey(bytes: bytes)
        let checksum = values.suffix(ClusterCode.checksumLength).map { ClusterCode.alphabet[Int($0)] }
        guard String(checksum) == ClusterCode.checksum(of: key.secret) else {
            throw SecurityError.clusterCodeMistyped
        }
        self = key
    }
}

/// Crockford base32 for the share code.
enum ClusterCode {
    static let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz")
    /// Characters for the 32 key bytes: ⌈256 / 5⌉.
    static let keyLength = 52
    static let checksumLength = 4
    static let length = keyLength + checksumLength

    /// The 5-bit value of a (lowercase) code character, with Crockford's
    /// aliases for characters that look alike.
    static func value(of character: Character) -> UInt8? {
        switch character {
        case "o": return 0
        case "i", "l": return 1
        default: return alphabet.firstIndex(of: character).map { UInt8($0) }
        }
    }

    /// Base32 of `bytes`, most significant bit first, zero-padded to a
    /// whole character.
    static func encode(_ bytes: [UInt8]) -> String {
        var text = ""
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                text.append(alphabet[Int((accumulator >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { text.append(alphabet[Int((accumulator << UInt32(5 - bits)) & 31)]) }
        return text
    }

    /// The bytes that `encode` wrote as `values`, or `nil` when the padding
    /// bits are not zero (which only a typo can cause).
    static func decode(_ values: some Collection<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for value in values {
            accumulator = (accumulator << 5 | UInt32(value)) & 0xFFF
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return bytes
    }

    /// Four characters (20 bits) of BLAKE2b over the key bytes.
    static func checksum(of key: SecretBytes) -> String {
        let digest = key.withUnsafeBytes { Sodium.hash($0, key: nil, outputSize: 16) }
        let value = UInt32(digest[0]) << 12 | UInt32(digest[1]) << 4 | UInt32(digest[2]) >> 4
        return String((0..<checksumLength).reversed().map { alphabet[Int((value >> UInt32($0 * 5)) & 31)] })
    }
}
