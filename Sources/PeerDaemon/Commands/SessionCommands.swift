import DaemonClient
import Foundation
import Replica

/// `peerd claim`, `release`, `session`, `dropped`: single-writer sessions
/// (docs/sessions.md). Through the running daemon a claim waits for a
/// relay's grant when one is reachable; on the files alone it is optimistic.
enum SessionCommands {
    static let all: [Command] = [
        Command(
            path: ["claim"], usage: "claim TYPE ID [--takeover] [--wait-ms N] [--json]",
            summary:
                "Claims an entity for this replica: from then on the fold applies only this replica's events to it. "
                + "--takeover takes it from its holder; --wait-ms (default 5000) bounds the wait for a relay's grant.",
            flags: ["takeover", "json"], options: ["wait-ms"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let (type, id) = (words[0], words[1])
            var waitMs = DaemonAPI.claimWaitMs.default
            if let text = arguments.options["wait-ms"] {
                guard let value = Int(text), value >= 0, value <= DaemonAPI.claimWaitMs.maximum else {
                    throw UsageError("--wait-ms must be a whole number from 0 to \(DaemonAPI.claimWaitMs.maximum)")
                }
                waitMs = value
            }
            let reply: JSONValue
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                let body = "{\"takeover\":\(arguments.has("takeover")),\"wait_ms\":\(waitMs)}"
                reply = try JSONValue.parse(try api.call("POST", path(type, id, "claim"), body: body))
            case .files(let directory):
                let log = try directory.openLog()
                let claim = try log.claim(entityType: type, entityID: id, takeover: arguments.has("takeover"))
                reply = .object([
                    "entity_type": .string(type), "entity_id": .string(id), "holder": .string(log.replicaID),
                    "mode": .string(ClaimDesk.Mode.optimistic.rawValue),
                    "claim": .string(claim.event.eventID.uuidString.lowercased()),
                    "granted_by": .null,
                ])
            }
            if arguments.has("json") { return print(reply.canonicalText) }
            let mode = reply["mode"]?.stringValue ?? "?"
            let by = reply["granted_by"]?.stringValue.map { " by relay \($0)" } ?? ""
            print("claimed \(type) \(id) (\(mode)\(mode == ClaimDesk.Mode.granted.rawValue ? by : ""))")
        },
        Command(
            path: ["release"], usage: "release TYPE ID [--force] [--json]",
            summary:
                "Ends this replica's session on an entity; --force ends whoever's session it is (a lost device).",
            flags: ["force", "json"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let (type, id) = (words[0], words[1])
            let stored: StoredEvent
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                let body = "{\"force\":\(arguments.has("force"))}"
                stored = try DaemonEndpoint.storedEvent(try api.call("POST", path(type, id, "release"), body: body))
            case .files(let directory):
                stored = try directory.openLog().release(entityType: type, entityID: id, force: arguments.has("force"))
            }
            print(arguments.has("json") ? EventJSON.line(for: stored) : "released \(type) \(id)")
        },
        Command(
            path: ["session"], usage: "session TYPE ID [--json]",
            summary: "Shows who holds an entity, its claims and requests, and how many events sessions dropped.",
            flags: ["json"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let report = try read(words[0], words[1], "session", directory) { log in
                SessionJSON.session(try log.session(entityType: words[0], entityID: words[1])).canonicalText
            }
            if arguments.has("json") { return print(report) }
            let value = try JSONValue.parse(report)
            let holder = value["holder"]?.stringValue.map { "\($0) (\(value["mode"]?.stringValue ?? ""))" } ?? "nobody"
            // Through `Output`, as `printTable` writes, so the lines keep their order.
            var heading = Output()
            heading.line("\(words[0]) \(words[1]): held by \(holder)")
            heading.flush()
            if case .array(let claims)? = value["claims"] {
                let rows = claims.map { claim in
                    [
                        claim["event_id"]?.stringValue ?? "", claim["claimant"]?.stringValue ?? "",
                        claim["stood"] == .bool(true) ? "stood" : claim["refusal"]?.stringValue ?? "",
                    ]
                }
                if !rows.isEmpty { printTable(header: ["CLAIM", "CLAIMANT", "OUTCOME"], rows: rows) }
            }
            var footer = Output()
            footer.line("dropped events: \(value["dropped_count"].map { $0.canonicalText } ?? "0")")
            footer.flush()
        },
        Command(
            path: ["dropped"], usage: "dropped TYPE ID [--json]",
            summary: "Lists an entity's dropped tail: the events its sessions did not apply, in canonical order.",
            flags: ["json"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let report = try read(words[0], words[1], "dropped", directory) { log in
                SessionJSON.dropped(
                    try log.session(entityType: words[0], entityID: words[1]),
                    history: try log.events(entityType: words[0], entityID: words[1]))
            }
            if arguments.has("json") { return print(report) }
            guard case .array(let dropped)? = try JSONValue.parse(report)["dropped"] else { return }
            let rows = dropped.map { row in
                let event = row["event"]
                return [
                    event?["replica_event_id"]?.stringValue ?? "", event?["replica_id"]?.stringValue ?? "",
                    event?["replica_time_ms"].map { $0.canonicalText } ?? "", row["holder"]?.stringValue ?? "",
                    event?["payload"].map { $0.canonicalText } ?? "",
                ]
            }
            printTable(header: ["EVENT", "WRITER", "TIME_MS", "HOLDER", "PAYLOAD"], rows: rows)
        },
    ]

    /// `/entities/TYPE/ID/ACTION`.
    static func path(_ type: String, _ id: String, _ action: String) -> String {
        "/entities/\(type)/\(id)/\(action)"
    }

    /// A session report through the daemon, else from the files.
    private static func read(
        _ type: String, _ id: String, _ action: String, _ directory: DataDirectory,
        files: (EventLog) throws -> String
    ) throws -> String {
        switch try ReplicaAccess.of(directory) {
        case .daemon(let api): return try api.call("GET", path(type, id, action))
        case .files(let directory): return try files(directory.openLog())
        }
    }
}
