import Foundation
import Replica

/// `peerd check`: the on-demand integrity check of `DIR/replica.db`. It
/// opens the file read-only, so it is safe while `peerd run` runs.
enum CheckCommand {
    static let command = Command(
        path: ["check"], usage: "check [--refold] [--json]",
        summary: """
            Checks DIR/replica.db without changing it, also while `peerd run` runs: SQLite's integrity_check, \
            then the log's own rules (every feed gap-free up to its cursor, offsets in seq order, event ids \
            unique, projected_offset within the log). --refold also folds every projection afresh from its \
            events and compares. Prints "ok: N events in M feeds, integrity_check ok" and exits 0, or one line \
            per finding and exits 1; a file that cannot be opened exits 1 with the reason. --json prints \
            {"ok":…,"findings":[{"kind":…,"detail":…}],…} instead. See docs/operations.md, "Checking a database".
            """,
        flags: ["refold", "json"]
    ) { arguments, directory in
        _ = try arguments.positional()
        let path = directory.databasePath
        try directory.requireReplica()
        let report: IntegrityReport
        do {
            var options = EventLog.Options()
            options.readOnly = true
            report = try EventLog.open(at: path, options: options).checkIntegrity(refold: arguments.has("refold"))
        } catch let error as EventLogError {
            if arguments.has("json") { print(CheckOutput(unopenable: path, error).json) }
            throw CommandError("cannot check \(path): \(error)")
        }
        if arguments.has("json") {
            print(CheckOutput(report).json)
        } else if report.isOK {
            print(report.summary)
        } else {
            for finding in report.findings { print(finding) }
        }
        guard report.isOK else {
            throw CommandError("\(report.summary); see docs/operations.md, \"Checking a database\"")
        }
    }
}

/// What `peerd check --json` prints.
struct CheckOutput: Codable {
    struct Finding: Codable {
        var kind: String
        var detail: String
        /// `replica_id/scope`.
        var feed: String?
        var seq: UInt64?
        /// `entity_type/entity_id`.
        var entity: String?
    }

    var ok: Bool
    var database: String
    var events: Int64
    var feeds: Int
    /// SQLite's `integrity_check` rows: `["ok"]` when it found nothing.
    var integrity_check: [String]
    /// Projections compared with a fresh fold (`--refold` only).
    var refolded: Int?
    var findings: [Finding]

    init(_ report: IntegrityReport) {
        ok = report.isOK
        database = report.path
        events = report.eventCount
        feeds = report.feedCount
        integrity_check = report.integrityCheck
        refolded = report.refolded
        findings = report.findings.map { finding in
            Finding(
                kind: finding.kind.rawValue, detail: finding.detail, feed: finding.feed?.description, seq: finding.seq,
                entity: finding.entityType.map { "\($0)/\(finding.entityID ?? "")" })
        }
    }

    /// A file that could not be opened at all: one finding, its reason.
    init(unopenable path: String, _ error: EventLogError) {
        ok = false
        database = path
        events = 0
        feeds = 0
        integrity_check = []
        let kind = error.storageFault.map { $0.kind == .damaged ? "damaged" : "unreadable" } ?? "unopenable"
        findings = [Finding(kind: kind, detail: "\(error)")]
    }

    var json: String { CanonicalJSON.text(of: self) }
}
