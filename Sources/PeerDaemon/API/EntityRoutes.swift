import Foundation
import Replica

/// `/entities/{type}…`: list, read, history, append and undo entities of
/// any type this replica folds, declared ones above all (docs/http-api.md
/// "Declared entities"). `/items` stays as the seed's client knows it.
extension DaemonAPI {
    /// The query arguments of a list that are not field filters.
    static let listArguments: Set<String> = ["after", "limit", "include_deleted"]
    /// The default and the largest page of a list.
    static let entityPageSize = (default: 100, maximum: 1_000)

    func entityRoute(_ request: HTTPRequest, _ segments: [String]) throws -> HTTPResponse {
        let type = segments[1]
        switch segments.count {
        case 2:
            guard request.method == "GET" else { throw methodNotAllowed(request, "GET") }
            return try listEntities(type, request)
        case 3:
            guard request.method == "GET" else { throw methodNotAllowed(request, "GET") }
            return try entity(type, id: segments[2])
        case 4 where segments[3] == "history":
            guard request.method == "GET" else { throw methodNotAllowed(request, "GET") }
            return try entityHistory(type, id: segments[2])
        case 4 where segments[3] == "events":
            guard request.method == "POST" else { throw methodNotAllowed(request, "POST") }
            return try appendEntityEvent(type, id: segments[2], request)
        case 4 where segments[3] == "undo":
            guard request.method == "POST" else { throw methodNotAllowed(request, "POST") }
            return try undoEntity(type, id: segments[2], request)
        case 4:
            return try sessionRoute(request, type: type, id: segments[2], action: segments[3])
        default:
            throw APIError.notFound("no such resource: \(request.path)")
        }
    }

    /// `{"entities":[state…],"next_after":ID|null}` in entity id order;
    /// `?FIELD=VALUE` keeps the entities whose field is that value (or, for
    /// a list or set, holds it), `?after=ID&limit=N` pages, deleted ones
    /// only with `?include_deleted=true`.
    private func listEntities(_ type: String, _ request: HTTPRequest) throws -> HTTPResponse {
        // A limit that is no number is out of range as 0 is.
        let limit = request.query["limit"].map { Int($0) ?? 0 } ?? Self.entityPageSize.default
        let filters = request.query.filter { !Self.listArguments.contains($0.key) }
        let page = try reads.read { log in
            try Self.entityPage(
                log, type: type, filters: filters, after: request.query["after"], limit: limit,
                includeDeleted: request.query["include_deleted"] == "true")
        }
        return .json(200, page.canonicalText)
    }

    /// A page of `type`'s states as `GET /entities/{type}` answers it (and `peerd entity list` prints it).
    static func entityPage(
        _ log: EventLog, type: String, filters: [String: String], after: String?, limit: Int, includeDeleted: Bool
    ) throws -> JSONValue {
        guard let domain = try log.domain(of: type) else { throw noDomain(type) }
        guard (1...Self.entityPageSize.maximum).contains(limit) else {
            throw APIError.badRequest("limit must be from 1 to \(Self.entityPageSize.maximum)")
        }
        var fields = domain.plan.map { Set($0.declaration.fields.keys).union(DomainDeclaration.stateKeys) }
        func checkFilters() throws {
            guard let fields, let unknown = filters.keys.sorted().first(where: { !fields.contains($0) }) else { return }
            throw APIError.badRequest(
                "\(type) has no field \(unknown) to filter on (it has \(fields.sorted().joined(separator: ", ")))")
        }
        try checkFilters()
        var page: [JSONValue] = []
        var more = false
        var cursor = after
        // In chunks of a page and one: a page without filters reads no further than it shows.
        scan: while true {
            let chunk = try log.states(entityType: type, after: cursor, limit: limit + 1)
            for (id, json) in chunk {
                cursor = id
                let state = try JSONValue.parse(json)
                if fields == nil, case .object(let members) = state {
                    // A Swift domain's fields are its states' keys.
                    fields = Set(members.keys)
                    try checkFilters()
                }
                guard includeDeleted || state["deleted"] != .bool(true),
                    filters.allSatisfy({ Self.matches(state[$0.key], $0.value) })
                else { continue }
                guard page.count < limit else {
                    more = true
                    break scan
                }
                page.append(state)
            }
            if chunk.count <= limit { break }
        }
        let next: JSONValue = more ? page.last?["id"] ?? .null : .null
        return .object(["entities": .array(page), "next_after": next])
    }

    static func noDomain(_ type: String) -> APIError {
        APIError.notFound("no domain folds \(type) here: declare it with POST /domains (docs/domains.md)")
    }

    /// Whether a state's field is `text`, as a query gives it: a string
    /// itself, a number or boolean as JSON writes it, `null`; a list or set
    /// when it holds such an element.
    static func matches(_ value: JSONValue?, _ text: String) -> Bool {
        switch value {
        case .array(let elements)?: elements.contains { matches($0, text) }
        case .string(let string)?: string == text
        case let value?: value.canonicalText == text
        case nil: false
        }
    }

    private func entity(_ type: String, id: String) throws -> HTTPResponse {
        _ = try foldedDomain(type)
        guard let state = try reads.read({ try $0.state(entityType: type, entityID: id) }) else {
            throw APIError.notFound("no \(type) \(id)")
        }
        return .json(200, state)
    }

    /// `{"events":[event…]}`: the entity's events in canonical order, each
    /// with `undone` (an undo cancelled it) and `poison` (its domain could
    /// not apply it).
    private func entityHistory(_ type: String, id: String) throws -> HTTPResponse {
        .json(200, try reads.read { try Self.history($0, type: type, id: id) }.canonicalText)
    }

    static func history(_ log: EventLog, type: String, id: String) throws -> JSONValue {
        let history = try log.history(entityType: type, entityID: id)
        guard !history.isEmpty else { throw APIError.notFound("no \(type) \(id)") }
        let lines = try history.map { entry -> JSONValue in
            guard case .object(var members) = try JSONValue.parse(EventJSON.line(for: entry.stored)) else {
                return .null
            }
            members["undone"] = .bool(entry.undone)
            members["poison"] = .bool(entry.poison)
            return .object(members)
        }
        return .object(["events": .array(lines)])
    }

    /// A payload such as `{"type":"Ticked","item":"fence"}`, checked against
    /// the declaration (422 naming the field), in the feed of `?scope=`,
    /// else the scope the declaration names, else `default`.
    private func appendEntityEvent(_ type: String, id: String, _ request: HTTPRequest) throws -> HTTPResponse {
        let domain = try declaredDomain(type)
        let scope = try entityScope(request, declared: domain.plan?.declaration.scope)
        let payload = try Self.jsonObject(request)
        let key = request.headers["idempotency-key"]
        if let key, key.isEmpty || key.utf8.count > 256 {
            throw APIError.badRequest("Idempotency-Key must be 1 to 256 bytes")
        }
        let event = NewEvent(entityType: type, entityID: id, payload: payload.canonicalText, scope: scope)
        func append() throws -> StoredEvent {
            if let state = try reads.read({ try $0.state(entityType: type, entityID: id) }),
                (try? JSONValue.parse(state))?["deleted"] == .bool(true)
            {
                throw APIError(
                    409, "deleted", "\(type) \(id) is deleted; POST /entities/\(type)/\(id)/undo restores it")
            }
            return try timedAppend { try $0.append(event, idempotencyKey: key) }
        }
        // A request with its own key says which write it is: no double-tap guess.
        let stored =
            try key != nil
            ? append() : doubleTaps.write(key: "entity/\(type)/\(id)\n\(scope)\n\(event.payload)", append)
        return .json(201, EventJSON.line(for: stored))
    }

    private func undoEntity(_ type: String, id: String, _ request: HTTPRequest) throws -> HTTPResponse {
        let domain = try declaredDomain(type)
        let scope = try entityScope(request, declared: domain.plan?.declaration.scope)
        let key = request.headers["idempotency-key"]
        let stored = try timedAppend {
            try $0.undo(entityType: type, entityID: id, scope: scope, idempotencyKey: key)
        }
        return .json(201, EventJSON.line(for: stored))
    }

    /// The domain this replica folds `type` with; 404 when it folds none.
    private func foldedDomain(_ type: String) throws -> Domain {
        guard let domain = try reads.read({ try $0.domain(of: type) }) else { throw Self.noDomain(type) }
        return domain
    }

    /// The declared domain of `type`, for a write: the Swift `item` has its
    /// own rules on `/items` (no negative quantity, no blank name, UUID ids).
    private func declaredDomain(_ type: String) throws -> Domain {
        let domain = try foldedDomain(type)
        guard domain.plan != nil else {
            throw APIError(
                409, "built_in",
                "\(type) is folded by this replica's own code: write it through /\(type)s (docs/http-api.md)")
        }
        return domain
    }

    /// `?scope=`, else the declared scope, else `default`; the certificate
    /// must let this replica write it. (The log refuses a declared type's
    /// event in another scope than its declaration names: `422 wrong_scope`.)
    private func entityScope(_ request: HTTPRequest, declared: String?) throws -> String {
        let given = request.query["scope"]
        if given?.isEmpty == true { throw APIError.badRequest("?scope= must name a scope") }
        let scope = given ?? declared ?? FeedID.defaultScope
        try requireWritable(scope)
        return scope
    }
}
