/// What a published service says it is (TXT `role`): a replica that syncs
/// for itself, or a relay that serves as a hub for others.
public enum ServiceRole: String, Hashable, Sendable, CustomStringConvertible {
    case peer
    case relay

    /// Parses the TXT `role` value, the inverse of `description`: `peer` or
    /// `relay`, in any case.
    public init?(text: String) {
        self.init(rawValue: text.lowercased())
    }

    public var description: String { rawValue }
}
