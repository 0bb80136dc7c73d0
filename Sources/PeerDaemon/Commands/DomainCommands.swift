import DaemonClient
import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd domain …` and `peerd entity …`: declared domains and their
/// entities (docs/domains.md, docs/cli.md). Each goes through the running
/// daemon's API when there is one, else to the replica's files.
enum DomainCommands {
    static let all: [Command] = [
        Command(
            path: ["domain", "declare"], usage: "domain declare FILE [--admin-key FILE] [--accept-refold] [--json]",
            summary: """
                Declares an entity type, or a new version of one, from its declaration (a JSON file, - for stdin; \
                docs/domains.md). In a cluster with an admin key it must be signed with that key (--admin-key). \
                A declaration that would change the state of existing entities is refused, naming them, unless \
                --accept-refold.
                """,
            flags: ["accept-refold", "json"], options: ["admin-key"]
        ) { arguments, directory in
            let file = try arguments.positional("FILE")[0]
            let text: String
            do {
                text =
                    file == "-"
                    ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                    : try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw CommandError("cannot read \(file): \(error.localizedDescription)")
            }
            let json: JSONValue
            do {
                json = try JSONValue.parse(text)
            } catch {
                throw CommandError("\(file) is not JSON: \(error)")
            }
            var declared: DeclarationEvent
            do {
                declared = try DeclarationEvent(declarationJSON: json)
            } catch let error as DeclarationError {
                throw CommandError("\(file): \(error)")
            }
            if let keyFile = arguments.options["admin-key"] {
                let admin: SigningKey
                do {
                    admin = try SigningKey.read(fromFile: keyFile)
                } catch let error as KeyFileError {
                    throw CommandError("--admin-key: \(error)")
                }
                declared.adminKey = admin.publicKey
                declared.signature = admin.sign(DeclarationEvent.signingMessage(json))
            }
            let accept = arguments.has("accept-refold")
            let answer: JSONValue
            switch try ReplicaAccess.of(directory) {
            case .daemon(let api):
                // Signed, it goes as the declaration event's payload does.
                let body = declared.signature == nil ? json.canonicalText : declared.payload
                let path = "/domains" + (accept ? "?accept_refold=true" : "")
                answer = try JSONValue.parse(try api.call("POST", path, body: body))
            case .files(let directory):
                let log = try directory.openLog()
                do {
                    answer = DaemonAPI.json(
                        DeclaredDomain(declared, stored: try log.declare(declared, acceptRefold: accept)))
                } catch let refusal as DeclarationRefusal {
                    throw CommandError(refusal.description)
                }
            }
            print(
                arguments.has("json")
                    ? answer.canonicalText
                    : "declared \(declared.declaration.entityType) version \(declared.declaration.version)")
        },
        Command(
            path: ["domain", "list"], usage: "domain list [--json]",
            summary: "Lists the declared domains this replica folds: type, version, who declared and who signed it.",
            flags: ["json"], options: []
        ) { arguments, directory in
            _ = try arguments.positional()
            let domains = try read(directory, "/domains") { log in
                .object(["domains": .array(try log.declaredDomains().map(DaemonAPI.json))])
            }
            if arguments.has("json") { return print(domains.canonicalText) }
            guard case .array(let list)? = domains["domains"] else { return }
            for domain in list {
                let signed = domain["signed_by"]?.stringValue.map { "signed by \($0.prefix(16))…" } ?? "unsigned"
                print(
                    "\(domain["entity_type"]?.stringValue ?? "?")  version \(domain["version"]?.canonicalText ?? "?")  "
                        + "declared by \(domain["declared_by"]?.stringValue ?? "?")  \(signed)")
            }
        },
        Command(
            path: ["domain", "show"], usage: "domain show TYPE",
            summary: "Prints the declaration of TYPE that this replica folds, as JSON.",
            flags: [], options: []
        ) { arguments, directory in
            let type = try arguments.positional("TYPE")[0]
            let domain = try read(directory, "/domains/\(type)") { log in
                guard let held = try log.declaredDomains().first(where: { $0.entityType == type }) else {
                    throw CommandError("no declared domain \(type)")
                }
                return DaemonAPI.json(held)
            }
            print(domain.canonicalText)
        },
        Command(
            path: ["entity", "list"],
            usage: "entity list TYPE [--where FIELD=VALUE]... [--after ID] [--limit N] [--include-deleted]",
            summary: """
                Prints the states of TYPE's entities as JSON, in id order: those whose FIELD is VALUE (or holds it) \
                for every --where, after ID, at most N (default 100).
                """,
            flags: ["include-deleted"], options: ["where", "after", "limit"]
        ) { arguments, directory in
            let type = try arguments.positional("TYPE")[0]
            var filters: [String: String] = [:]
            for pair in arguments.repeated["where"] ?? [] {
                guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                    throw UsageError.badValue(pair, of: "where", "needs FIELD=VALUE")
                }
                filters[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            let limit = try arguments.options["limit"].map { text in
                guard let number = Int(text), number > 0 else {
                    throw UsageError.badValue(text, of: "limit", "needs a whole number of 1 or more")
                }
                return number
            }
            var query = filters.sorted { $0.key < $1.key }.map { "\(percent($0.key))=\(percent($0.value))" }
            if let after = arguments.options["after"] { query.append("after=\(percent(after))") }
            if let limit { query.append("limit=\(limit)") }
            if arguments.has("include-deleted") { query.append("include_deleted=true") }
            let path = "/entities/\(percent(type))" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
            let page = try read(directory, path) { log in
                try DaemonAPI.entityPage(
                    log, type: type, filters: filters, after: arguments.options["after"],
                    limit: limit ?? DaemonAPI.entityPageSize.default,
                    includeDeleted: arguments.has("include-deleted"))
            }
            print(page.canonicalText)
        },
        Command(
            path: ["entity", "get"], usage: "entity get TYPE ID",
            summary: "Prints the state of one entity as JSON.", flags: [], options: []
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let state = try read(directory, "/entities/\(percent(words[0]))/\(percent(words[1]))") { log in
                guard let state = try log.state(entityType: words[0], entityID: words[1]) else {
                    throw CommandError("no \(words[0]) \(words[1])")
                }
                return try JSONValue.parse(state)
            }
            print(state.canonicalText)
        },
        Command(
            path: ["entity", "history"], usage: "entity history TYPE ID",
            summary: "Prints one entity's events in canonical order as JSON, each with undone and poison.",
            flags: [], options: []
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let history = try read(directory, "/entities/\(percent(words[0]))/\(percent(words[1]))/history") {
                try DaemonAPI.history($0, type: words[0], id: words[1])
            }
            print(history.canonicalText)
        },
        Command(
            path: ["entity", "append"],
            usage: "entity append TYPE ID PAYLOAD [--scope SCOPE] [--idempotency-key KEY] [--json]",
            summary: """
                Appends an event, such as '{"type":"Ticked","item":"fence"}', to an entity of a declared type; \
                it must fit the declaration. SCOPE defaults to the declaration's scope, else default.
                """,
            flags: ["json"], options: ["scope", "idempotency-key"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID", "PAYLOAD")
            try append(words[0], id: words[1], payload: words[2], arguments, directory)
        },
        Command(
            path: ["entity", "create"],
            usage: "entity create TYPE PAYLOAD [--scope SCOPE] [--idempotency-key KEY] [--json]",
            summary: "Appends the first event of a new entity of TYPE and prints its id (a new UUID).",
            flags: ["json"], options: ["scope", "idempotency-key"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "PAYLOAD")
            try append(words[0], id: UUID().uuidString.lowercased(), payload: words[1], arguments, directory)
        },
        Command(
            path: ["entity", "undo"], usage: "entity undo TYPE ID [--scope SCOPE] [--idempotency-key KEY] [--json]",
            summary: "Undoes the entity's latest event that is not undone yet.",
            flags: ["json"], options: ["scope", "idempotency-key"]
        ) { arguments, directory in
            let words = try arguments.positional("TYPE", "ID")
            let stored = try write(words[0], id: words[1], "undo", arguments, directory) { log, scope, key in
                try log.undo(entityType: words[0], entityID: words[1], scope: scope, idempotencyKey: key)
            }
            print(
                arguments.has("json")
                    ? EventJSON.line(for: stored) : "undid an event of \(words[0]) \(words[1])")
        },
    ]

    private static func append(
        _ type: String, id: String, payload: String, _ arguments: Arguments, _ directory: DataDirectory
    ) throws {
        let stored = try write(type, id: id, "events", body: payload, arguments, directory) { log, scope, key in
            if let state = try log.state(entityType: type, entityID: id),
                (try? JSONValue.parse(state))?["deleted"] == .bool(true)
            {
                throw CommandError("\(type) \(id) is deleted; `peerd entity undo \(type) \(id)` restores it")
            }
            do {
                return try log.append(
                    NewEvent(entityType: type, entityID: id, payload: payload, scope: scope), idempotencyKey: key)
            } catch EventLogError.invalidEvent(let reason) {
                throw CommandError(reason)
            }
        }
        print(arguments.has("json") ? EventJSON.line(for: stored) : id)
    }

    /// One write to an entity of a declared type: `POST /entities/TYPE/ID/ACTION`
    /// through the running daemon, else `files` on the replica's log with the
    /// scope chosen as the API chooses it and the `--idempotency-key`.
    private static func write(
        _ type: String, id: String, _ action: String, body: String? = nil, _ arguments: Arguments,
        _ directory: DataDirectory, files: (EventLog, _ scope: String, _ key: String?) throws -> StoredEvent
    ) throws -> StoredEvent {
        let key = arguments.options["idempotency-key"]
        switch try ReplicaAccess.of(directory) {
        case .daemon(let api):
            let path = "/entities/\(percent(type))/\(percent(id))/\(action)" + scopeQuery(arguments)
            return try DaemonEndpoint.storedEvent(try api.call("POST", path, body: body, idempotencyKey: key))
        case .files(let directory):
            let log = try directory.openLog()
            try requireDeclared(type, in: log)
            return try files(log, try scope(arguments, type: type, log: log, directory: directory), key)
        }
    }

    /// Refuses, as the API does, a write to a type no declaration folds
    /// here: none, or one of this replica's own code (`peerd item` writes items).
    private static func requireDeclared(_ type: String, in log: EventLog) throws {
        guard let domain = try log.domain(of: type) else { throw CommandError("no domain folds \(type) here") }
        guard domain.plan != nil else {
            throw CommandError("\(type) is folded by this replica's own code: write it with `peerd \(type) …`")
        }
    }

    /// `--scope`, else the declared scope, else `default`, as the API chooses.
    private static func scope(_ arguments: Arguments, type: String, log: EventLog, directory: DataDirectory) throws
        -> String
    {
        let scope =
            try arguments.options["scope"] ?? log.domain(of: type)?.plan?.declaration.scope ?? FeedID.defaultScope
        if let certificate = try directory.certificate(), !certificate.mayWrite(scope) {
            throw CommandError("this replica's certificate does not let it write scope \(scope)")
        }
        return scope
    }

    private static func scopeQuery(_ arguments: Arguments) -> String {
        arguments.options["scope"].map { "?scope=\(percent($0))" } ?? ""
    }

    /// A read from the daemon's API when it runs, else from the files.
    private static func read(
        _ directory: DataDirectory, _ path: String, files: (EventLog) throws -> JSONValue
    ) throws -> JSONValue {
        switch try ReplicaAccess.of(directory) {
        case .daemon(let api): return try JSONValue.parse(try api.call("GET", path))
        case .files(let directory):
            do {
                return try files(try directory.openLog())
            } catch let error as APIError {
                throw CommandError(error.message)
            }
        }
    }

    private static func percent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? text
    }
}
