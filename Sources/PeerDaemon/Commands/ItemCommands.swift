import DaemonClient
import Foundation
import Replica
import SyncProtocol

/// `peerd item …`: append Item events to this replica's feed.
enum ItemCommands {
    static let all: [Command] = [
        Command(
            path: ["item", "create"], usage: "item create NAME QTY [--scope SCOPE] [--json] [--idempotency-key KEY]",
            summary: """
                Creates an item and prints its id (or the stored event with --json). Its Created event goes to \
                this replica's feed of SCOPE (default: default), which the replica's certificate must let it write.
                """,
            flags: ["json"], options: ["idempotency-key", "scope"]
        ) { arguments, directory in
            let words = try arguments.positional("NAME", "QTY")
            let name = try name(words[0])
            let quantity = try quantity(words[1])
            let key = arguments.options["idempotency-key"]
            let scope = arguments.options["scope"] ?? FeedID.defaultScope
            guard !scope.isEmpty else { throw UsageError.badValue(scope, of: "scope", "needs a scope name") }
            let stored: StoredEvent
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                let body =
                    "{\"name\":\(EventJSON.quoted(name)),\"quantity\":\(quantity),\"scope\":\(EventJSON.quoted(scope))}"
                stored = try DaemonEndpoint.storedEvent(try api.call("POST", "/items", body: body, idempotencyKey: key))
            case .files(let directory):
                try requireWritable(scope, in: directory)
                stored = try directory.openLog().append(
                    NewEvent(
                        item: UUID().uuidString.lowercased(), .created(name: name, quantity: quantity), scope: scope),
                    idempotencyKey: key)
            }
            report(stored, arguments, plain: stored.event.entityID)
        },
        edit(["item", "rename"], "item rename ID NAME", "Renames an item.", "NAME") { .renamed(name: try name($0)) },
        edit(["item", "qty"], "item qty ID N", "Sets an item's quantity.", "N") {
            .quantityChanged(quantity: try quantity($0))
        },
        Command(
            path: ["item", "note"], usage: "item note ID (TEXT | --clear) [--json] [--idempotency-key KEY]",
            summary: "Sets an item's note, or clears it with --clear.",
            flags: ["json", "clear"], options: ["idempotency-key"]
        ) { arguments, directory in
            let words =
                arguments.has("clear") ? try arguments.positional("ID") : try arguments.positional("ID", "TEXT")
            try appendEdit(.noteChanged(note: words.count == 2 ? words[1] : nil), to: words[0], arguments, directory)
        },
        Command(
            path: ["item", "delete"], usage: "item delete ID [--json] [--idempotency-key KEY]",
            summary: "Deletes an item; deletion wins.",
            flags: ["json"], options: ["idempotency-key"]
        ) { arguments, directory in
            try appendEdit(.deleted, to: try arguments.positional("ID")[0], arguments, directory)
        },
        Command(
            path: ["item", "undo"], usage: "item undo ID [--json] [--idempotency-key KEY]",
            summary: "Undoes the item's latest event that is not undone yet (at most 10 in a row).",
            flags: ["json"], options: ["idempotency-key"]
        ) { arguments, directory in
            let id = try arguments.positional("ID")[0]
            let key = arguments.options["idempotency-key"]
            let stored: StoredEvent
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                stored = try DaemonEndpoint.storedEvent(
                    try api.call("POST", "/items/\(id)/undo", idempotencyKey: key))
            case .files(let directory):
                try requireWritable(FeedID.defaultScope, in: directory)
                // As the API answers: an item this replica does not know is named as such.
                let log = try directory.openLog()
                guard try log.projection(Item.self, id: id) != nil else { throw CommandError("no item \(id)") }
                stored = try log.undo(entityType: Item.entityType, entityID: id, idempotencyKey: key)
            }
            report(
                stored, arguments,
                plain: "undid an event of item \(id) (event \(stored.event.eventID.uuidString.lowercased()))")
        },
    ]

    /// A command that appends one edit to an existing item.
    private static func edit(
        _ path: [String], _ usage: String, _ summary: String, _ valueName: String,
        _ makeEvent: @escaping @Sendable (String) throws -> ItemEvent
    ) -> Command {
        Command(
            path: path, usage: usage + " [--json] [--idempotency-key KEY]", summary: summary, flags: ["json"],
            options: ["idempotency-key"]
        ) { arguments, directory in
            let words = try arguments.positional("ID", valueName)
            try appendEdit(try makeEvent(words[1]), to: words[0], arguments, directory)
        }
    }

    private static func appendEdit(
        _ event: ItemEvent, to id: String, _ arguments: Arguments, _ directory: DataDirectory
    ) throws {
        let key = arguments.options["idempotency-key"]
        let stored: StoredEvent
        switch try ReplicaAccess.of(directory) {
        case .daemon(let api):
            do {
                stored = try DaemonEndpoint.storedEvent(
                    try api.call("POST", "/items/\(id)/events", body: event.payload, idempotencyKey: key))
            } catch let error as CommandError where error.code == "deleted" {
                throw isDeleted(id)  // The API's own message names its HTTP route.
            }
        case .files(let directory):
            try requireWritable(FeedID.defaultScope, in: directory)
            let log = try directory.openLog()
            guard let item = try log.projection(Item.self, id: id) else { throw CommandError("no item \(id)") }
            if item.deleted { throw isDeleted(id) }
            stored = try log.append(NewEvent(item: id, event), idempotencyKey: key)
        }
        report(
            stored, arguments, plain: "\(event.type) item \(id) (event \(stored.event.eventID.uuidString.lowercased()))"
        )
    }

    /// Refuses, as the API does, a write in a scope this replica's certificate may not write.
    private static func requireWritable(_ scope: String, in directory: DataDirectory) throws {
        if let certificate = try directory.certificate(), !certificate.mayWrite(scope) {
            throw CommandError("this replica's certificate does not let it write scope \(scope)")
        }
    }

    private static func isDeleted(_ id: String) -> CommandError {
        CommandError("item \(id) is deleted; `peerd item undo \(id)` restores it")
    }

    private static func report(_ stored: StoredEvent, _ arguments: Arguments, plain: String) {
        print(arguments.has("json") ? EventJSON.line(for: stored) : plain)
    }

    private static func name(_ text: String) throws -> String {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError("NAME must not be empty") }
        return text
    }

    private static func quantity(_ text: String) throws -> Int64 {
        guard let value = Int64(text), value >= 0 else {
            throw UsageError("quantity \"\(text)\" is not a whole number of 0 or more")
        }
        return value
    }
}
