import DaemonClient
import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd items`, `events`, `status`: read what this replica holds.
enum ReadCommands {
    static let all: [Command] = [
        Command(
            path: ["items"], usage: "items [--json] [--include-deleted]",
            summary: "Lists items that are not deleted, sorted by name.", flags: ["json", "include-deleted"]
        ) { arguments, directory in
            _ = try arguments.positional()
            let items: [Item]
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                let reply = try api.call(
                    "GET", "/items" + (arguments.has("include-deleted") ? "?include_deleted=true" : ""))
                items = try CanonicalJSON.decode(
                    [Item].self, from: (try JSONValue.parse(reply))["items"]?.canonicalText ?? "[]")
            case .files(let directory):
                items = try directory.openLog().projections(Item.self)
                    .filter { arguments.has("include-deleted") || !$0.deleted }
                    .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
            }
            if arguments.has("json") {
                print(CanonicalJSON.text(of: items))
                return
            }
            let rows = items.map { item in
                [item.id, item.name, String(item.quantity), item.deleted ? "deleted" : "", item.note ?? ""]
            }
            printTable(header: ["ID", "NAME", "QTY", "STATE", "NOTE"], rows: rows)
        },
        Command(
            path: ["events"], usage: "events [--json]",
            summary: "Lists every event in local arrival order (--json: one JSON object per line).", flags: ["json"]
        ) { arguments, directory in
            _ = try arguments.positional()
            var output = Output()
            if !arguments.has("json") { output.line("OFFSET  TIME_MS        REPLICA/SCOPE  SEQ  ENTITY  PAYLOAD") }
            let show = { (page: [StoredEvent]) in
                for stored in page {
                    output.line(arguments.has("json") ? EventJSON.line(for: stored) : describe(stored))
                }
            }
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                var after: Int64 = 0
                while true {
                    let reply = try JSONValue.parse(try api.call("GET", "/log?after=\(after)&limit=10000"))
                    guard case .array(let events)? = reply["events"] else { break }
                    show(try events.map { try DaemonEndpoint.storedEvent($0.canonicalText) })
                    guard case .int(let next)? = reply["next_offset"] else { break }
                    after = next
                }
            case .files(let directory):
                try directory.openLog().forEachEventPage(show)
            }
            output.flush()
        },
        Command(
            path: ["status"], usage: "status [--json]",
            summary: """
                Shows the replica id, vector cursor, event count and state hash; with a daemon running, also \
                its sync progress, peers in sync and clock skew seen.
                """,
            flags: ["json"]
        ) { arguments, directory in
            _ = try arguments.positional()
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                let reply = try api.call("GET", "/status")
                guard !arguments.has("json") else { return print(reply) }
                let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(reply.utf8))
                print(status.text)
            case .files(let directory):
                let status = try ReplicaStatus(log: try directory.openLog())
                print(arguments.has("json") ? status.json : status.text)
            }
        },
    ]

    private static func describe(_ stored: StoredEvent) -> String {
        let event = stored.event
        return
            "\(stored.offset)  \(event.timeMs)  \(event.feed)  \(event.seq)  "
            + "\(event.entityType)/\(event.entityID)  \(event.payload)"
    }
}

/// What `peerd status` reports.
struct ReplicaStatus: Codable {
    struct CursorEntry: Codable {
        var replica_id: String
        var scope: String
        var seq: UInt64
    }

    var replica_id: String
    var cursor: [CursorEntry]
    var feeds: Int
    var event_count: Int64
    var state_hash: String
    var forks: Int64
    var poison_events: Int64
    /// Feeds quarantined because their origin signed two histories (docs/protocol.md "Fork proofs").
    var forked_feeds: [ForkedFeed]
    /// Origins whose unsigned history a replica vouched for (docs/identity.md "Vouching for unsigned history").
    var vouched: [VouchReport]
    /// The version of each declared domain this replica folds, by entity
    /// type (docs/domains.md); absent in a status of an older build.
    var domains: [String: Int64]?
    /// The checkpoint this replica folds from (docs/operations.md
    /// "Checkpoints"); absent when it has none.
    var checkpoint: CheckpointReport?

    struct ForkedFeed: Codable {
        var replica_id: String
        var scope: String
        /// The seq at which the two histories differ (this replica's signed head there).
        var seq: UInt64
    }

    /// `known`: a state summary already computed (by the sync node); used
    /// instead of hashing every projection again when it describes the
    /// cursor the log holds now.
    init(log: EventLog, known: StateReport? = nil) throws {
        let cursor = try log.cursor()
        replica_id = log.replicaID
        self.cursor = cursor.feeds.map { CursorEntry(replica_id: $0.replicaID, scope: $0.scope, seq: cursor[$0]) }
        feeds = cursor.feeds.count
        domains = try log.domainVersions()
        checkpoint = try log.checkpoint().map(CheckpointReport.init)
        if let known, known.cursor == cursor {
            event_count = known.summary.eventCount
            state_hash = known.summary.hash.hex
        } else {
            event_count = try log.eventCount()
            state_hash = try log.stateHash()
        }
        forks = try log.forkCount()
        poison_events = try log.poisonEventCount()
        forked_feeds = try log.forkProofs().map {
            ForkedFeed(replica_id: $0.feed.replicaID, scope: $0.feed.scope, seq: $0.held.seq)
        }
        vouched = try log.certificates().compactMap { try? Certificate(bytes: $0) }.compactMap(VouchReport.init)
    }

    var json: String { CanonicalJSON.text(of: self) }

    var text: String {
        var lines = [
            "replica     \(replica_id)",
            "events      \(event_count)",
            "state hash  \(state_hash)",
            "forks       \(forks)",
            "poison      \(poison_events)",
        ]
        lines += forked_feeds.map {
            "forked      \($0.replica_id)/\($0.scope) at seq \($0.seq): its origin signed two histories; "
                + "quarantined (neither taken nor served)"
        }
        lines += vouched.map(\.text)
        lines.append("cursor")
        lines += cursor.map { "  \($0.replica_id)/\($0.scope)  \($0.seq)" }
        return lines.joined(separator: "\n")
    }
}
