import Foundation

/// The generic events of single-writer sessions (docs/sessions.md). Like
/// `Undone`, they belong to no domain: any entity can be claimed, and the
/// fold reads them before the domain sees anything.
///
/// ```swift
/// SessionEvent.claimed(after: nil).payload    // {"type":"Claimed"}
/// ```
public enum SessionEvent: Sendable, Hashable {
    /// An optimistic claim by the event's writer, taking over from the
    /// holder whose claim is `after` (nil: the entity was free).
    case claimed(after: UUID?)
    /// A request by the event's writer for a relay's grant.
    case claimRequested(after: UUID?)
    /// A relay's grant of the request `request` to `holder`.
    case claimGranted(request: UUID, holder: String, after: UUID?)
    /// A relay's refusal of the request `request`: `holder` holds the
    /// entity, or, nil, the request waited too long for an answer.
    case claimRefused(request: UUID, holder: String?)
    /// The end of a session: by its holder (`forcedHolder` nil), or forced
    /// by an operator for the holder named (a lost device).
    case released(forcedHolder: String?)

    /// The payload `type` of each case; no domain may use these.
    public static let types: Set<String> = ["Claimed", "ClaimRequested", "ClaimGranted", "ClaimRefused", "Released"]

    /// The payload `type` of this event.
    public var type: String {
        switch self {
        case .claimed: return "Claimed"
        case .claimRequested: return "ClaimRequested"
        case .claimGranted: return "ClaimGranted"
        case .claimRefused: return "ClaimRefused"
        case .released: return "Released"
        }
    }

    /// The canonical JSON payload.
    public var payload: String {
        var object: [String: JSONValue] = ["type": .string(type)]
        switch self {
        case .claimed(let after), .claimRequested(let after):
            if let after { object["after"] = .string(after.lowercased) }
        case .claimGranted(let request, let holder, let after):
            object["request"] = .string(request.lowercased)
            object["holder"] = .string(holder)
            if let after { object["after"] = .string(after.lowercased) }
        case .claimRefused(let request, let holder):
            object["request"] = .string(request.lowercased)
            if let holder { object["holder"] = .string(holder) }
        case .released(let forcedHolder):
            if let forcedHolder {
                object["forced"] = .bool(true)
                object["holder"] = .string(forcedHolder)
            }
        }
        return JSONValue.object(object).canonicalText
    }

    private static let markers = [Array(#""Claim"#.utf8), Array(#""Released""#.utf8)]

    /// True when `payload` may be a session event: a cheap test before
    /// parsing (most payloads are domain events).
    static func mayBe(_ payload: String) -> Bool {
        markers.contains { payload.utf8.contains(subsequence: $0) }
    }

    /// The session event in `payload`, or nil when it is something else
    /// (a payload with a session `type` but malformed fields is none: the
    /// fold treats it as the domain would, as poison for a folded type).
    public static func parse(_ payload: String) -> SessionEvent? {
        guard mayBe(payload), let value = try? JSONValue.parse(payload) else { return nil }
        return parse(value)
    }

    static func parse(_ value: JSONValue) -> SessionEvent? {
        guard case .object(let object) = value, let type = object["type"]?.stringValue else { return nil }
        func id(_ key: String) -> UUID?? {
            guard let field = object[key] else { return .some(nil) }
            if case .null = field { return .some(nil) }
            guard let text = field.stringValue, let uuid = UUID(uuidString: text) else { return nil }
            return .some(uuid)
        }
        func text(_ key: String) -> String? {
            guard let field = object[key]?.stringValue, !field.isEmpty else { return nil }
            return field
        }
        switch type {
        case "Claimed":
            guard let after = id("after") else { return nil }
            return .claimed(after: after)
        case "ClaimRequested":
            guard let after = id("after") else { return nil }
            return .claimRequested(after: after)
        case "ClaimGranted":
            guard let after = id("after"), let request = id("request") ?? nil, let holder = text("holder") else {
                return nil
            }
            return .claimGranted(request: request, holder: holder, after: after)
        case "ClaimRefused":
            guard let request = id("request") ?? nil else { return nil }
            return .claimRefused(request: request, holder: text("holder"))
        case "Released":
            if object["forced"] == .bool(true) {
                guard let holder = text("holder") else { return nil }
                return .released(forcedHolder: holder)
            }
            return .released(forcedHolder: nil)
        default:
            return nil
        }
    }
}

extension Event {
    /// Who wrote the event, as sessions name holders: the origin replica,
    /// or for a thin client's event the client, whichever node filed it.
    public var writer: String { feed.writer }
}

extension FeedID {
    /// The writer of this feed's events: the replica id, or the thin
    /// client's id for a feed `<client>@<node>`.
    public var writer: String {
        guard isThinClient, let at = replicaID.lastIndex(of: FeedID.thinClientSeparator) else { return replicaID }
        return String(replicaID[..<at])
    }
}
