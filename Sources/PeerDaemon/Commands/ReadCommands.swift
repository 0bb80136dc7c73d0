import Foundation
import Replica

/// `peerd items`, `events`, `status`: read what this replica holds.
enum ReadCommands {
    static let all: [Command] = [
        Command(
            path: ["items"], usage: "items [--json] [--include-deleted]",
            summary: "Lists items that are not deleted, sorted by name.", flags: ["json", "include-deleted"]
        ) { arguments, directory in
            _ = try arguments.positional()
            let items = try directory.openLog().projections(Item.self)
                .filter { arguments.has("include-deleted") || !$0.deleted }
                .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
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
            let log = try directory.openLog()
            var output = Output()
            if !arguments.has("json") { output.line("OFFSET  TIME_MS        REPLICA/SCOPE  SEQ  ENTITY  PAYLOAD") }
            try log.forEachEventPage { page in
                for stored in page {
                    output.line(arguments.has("json") ? EventJSON.line(for: stored) : describe(stored))
                }
            }
            output.flush()
        },
        Command(
            path: ["status"], usage: "status [--json]",
            summary: "Shows the replica id, vector cursor, event count and state hash.", flags: ["json"]
        ) { arguments, directory in
            _ = try arguments.positional()
            let status = try ReplicaStatus(log: try directory.openLog())
            print(arguments.has("json") ? status.json : status.text)
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
struct ReplicaStatus: Encodable {
    struct CursorEntry: Encodable {
        var replica_id: String
        var scope: String
        var seq: UInt64
    }

    var replica_id: String
    var cursor: [CursorEntry]
    var event_count: Int64
    var state_hash: String
    var forks: Int64
    var poison_events: Int64

    init(log: EventLog) throws {
        let cursor = try log.cursor()
        replica_id = log.replicaID
        self.cursor = cursor.feeds.map { CursorEntry(replica_id: $0.replicaID, scope: $0.scope, seq: cursor[$0]) }
        event_count = try log.eventCount()
        state_hash = try log.stateHash()
        forks = try log.forkCount()
        poison_events = try log.poisonEventCount()
    }

    var json: String { CanonicalJSON.text(of: self) }

    var text: String {
        var lines = [
            "replica     \(replica_id)",
            "events      \(event_count)",
            "state hash  \(state_hash)",
            "forks       \(forks)",
            "poison      \(poison_events)",
            "cursor",
        ]
        lines += cursor.map { "  \($0.replica_id)/\($0.scope)  \($0.seq)" }
        return lines.joined(separator: "\n")
    }
}
