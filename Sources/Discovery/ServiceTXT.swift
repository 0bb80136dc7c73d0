/// A service's TXT record as keys and values (RFC 6763 §6): keys compare
/// case-insensitively, the first occurrence of a key wins, and a string
/// without `=` is a key with an empty value.
///
/// ```swift
/// let txt = ServiceTXT(["id=r1", "V=1", "role=peer", "id=ignored"])
/// txt["v"]   // "1"
/// txt["id"]  // "r1"
/// ```
public struct ServiceTXT: Hashable, Sendable {
    /// The keys PeerSync publishes.
    public enum Key {
        /// The replica id.
        public static let replicaID = "id"
        /// The protocol version, decimal.
        public static let protocolVersion = "v"
        /// `peer` or `relay`.
        public static let role = "role"
        /// The cluster key's fingerprint.
        public static let cluster = "cluster"
    }

    /// The values by lowercased key.
    public private(set) var values: [String: String] = [:]

    /// Parses the record's strings, in the order they came.
    public init(_ strings: [String]) {
        for string in strings {
            let key: Substring
            let value: Substring
            if let equals = string.firstIndex(of: "=") {
                key = string[..<equals]
                value = string[string.index(after: equals)...]
            } else {
                key = string[...]
                value = ""
            }
            guard !key.isEmpty else { continue }
            let lowered = key.lowercased()
            if values[lowered] == nil { values[lowered] = String(value) }
        }
    }

    /// The value of `key` (any case), or `nil` when the record lacks it.
    public subscript(key: String) -> String? { values[key.lowercased()] }
}
