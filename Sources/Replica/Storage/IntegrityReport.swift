/// What `EventLog.checkIntegrity(refold:)` found: SQLite's own
/// `integrity_check` and the log's invariants, each problem a finding that
/// names the feed, seq, offset or entity involved.
///
/// ```swift
/// let report = try log.checkIntegrity()
/// print(report.isOK ? report.summary : report.findings.map(\.description).joined(separator: "\n"))
/// // ok: 20000 events in 3 feeds, integrity_check ok
/// ```
public struct IntegrityReport: Sendable, Hashable {
    /// One problem found.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// Which check found it.
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            /// SQLite's `integrity_check` reported a damaged page or index,
            /// or a read failed because the file is damaged.
            case damaged
            /// A read failed with another storage fault (an I/O error).
            case unreadable
            /// A feed lacks a seq between 1 and its newest stored one.
            case gap
            /// A feed's `head_seq` (its cursor entry) is not its newest stored seq.
            case head
            /// Within a feed, a later seq arrived at a lower local offset.
            case offsetOrder = "offset_order"
            /// One event id is stored more than once.
            case duplicateEventID = "duplicate_event_id"
            /// An event names a feed row that does not exist.
            case unknownFeed = "unknown_feed"
            /// `meta` lacks a setting, or `projected_offset` is past the newest event.
            case meta
            /// An entity's chain of events (`entity_prev`, `last_offset`)
            /// does not reach exactly its stored events.
            case chain
            /// A projection is not what a fresh fold of its entity's events gives.
            case projection
        }

        public var kind: Kind
        /// What was found, naming what is involved; one line.
        public var detail: String
        /// The feed involved, if one is.
        public var feed: FeedID?
        /// The seq involved (the first missing one, for a gap).
        public var seq: UInt64?
        /// The entity involved, as `(entity_type, entity_id)`.
        public var entityType: String?
        public var entityID: String?

        public init(
            _ kind: Kind, _ detail: String, feed: FeedID? = nil, seq: UInt64? = nil, entityType: String? = nil,
            entityID: String? = nil
        ) {
            self.kind = kind
            self.detail = detail
            self.feed = feed
            self.seq = seq
            self.entityType = entityType
            self.entityID = entityID
        }

        public var description: String { "\(kind.rawValue): \(detail)" }
    }

    /// The database file checked.
    public var path: String
    /// What `PRAGMA integrity_check` said: `["ok"]` when it found nothing
    /// (empty when it could not run).
    public var integrityCheck: [String] = []
    /// Every problem, in the order the checks ran.
    public var findings: [Finding] = []
    /// Events stored, as counted by the check.
    public var eventCount: Int64 = 0
    /// Feeds with at least one stored event.
    public var feedCount = 0
    /// How many projections were compared with a fresh fold; nil when the
    /// check did not refold.
    public var refolded: Int?

    public init(path: String) {
        self.path = path
    }

    /// True when nothing was found.
    public var isOK: Bool { findings.isEmpty }

    /// One line: `ok: N events in M feeds, integrity_check ok`, or how many
    /// problems there are.
    public var summary: String {
        guard isOK else {
            return "\(findings.count) problem\(findings.count == 1 ? "" : "s") in \(path)"
        }
        var text = "ok: \(eventCount) events in \(feedCount) feeds, integrity_check ok"
        if let refolded { text += ", \(refolded) projections refolded" }
        return text
    }
}
