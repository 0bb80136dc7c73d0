import Foundation
import Replica

/// `/items`: list, read, create, edit and undo items.
extension DaemonAPI {
    func listItems(_ request: HTTPRequest) throws -> HTTPResponse {
        let includeDeleted = request.query["include_deleted"] == "true"
        let items = try reads.read { try $0.itemStates(includeDeleted: includeDeleted) }
        return .json(200, "{\"items\":[" + items.joined(separator: ",") + "]}")
    }

    func item(id: String) throws -> HTTPResponse {
        guard let item = try reads.read({ try $0.projection(Item.self, id: id) }) else {
            throw APIError.notFound("no item \(id)")
        }
        return .json(value: item)
    }

    /// `{name, quantity, scope?}` → a `Created` event for a new item, in
    /// the feed of `scope` (default `default`).
    func createItem(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try Self.jsonObject(request)
        let scope: String
        switch body["scope"] {
        case nil, .null?: scope = try writableScope(FeedID.defaultScope)
        case .string(let given)?: scope = try writableScope(given)
        default: throw APIError.invalidEvent("scope must be a string")
        }
        guard case .string(let name)? = body["name"], !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw APIError.invalidEvent("name must be a non-empty string")
        }
        guard case .int(let quantity)? = body["quantity"], quantity >= 0 else {
            throw APIError.invalidEvent("quantity must be a whole number of 0 or more")
        }
        let event = ItemEvent.created(name: name, quantity: quantity)
        return try store(request, doubleTapKey: "item/new\n\(scope)\n\(event.payload)") {
            NewEvent(item: UUID().uuidString.lowercased(), event, scope: scope)
        }
    }

    /// An Item event payload such as `{"type":"Renamed","name":"x"}` for an
    /// existing item that is not deleted, in the feed of `?scope=` (default `default`).
    func appendItemEvent(id: String, _ request: HTTPRequest) throws -> HTTPResponse {
        let scope = try writableScope(try Self.scope(request))
        let payload = try Self.jsonObject(request)
        guard let type = payload["type"]?.stringValue else {
            throw APIError.invalidEvent("the payload needs a \"type\"")
        }
        if type == "Created" { throw APIError.invalidEvent("Created makes a new item: POST /items") }
        try Self.checkLocalEdit(payload)
        // The event log validates the payload against the Item domain (422 when it does not fit).
        let event = NewEvent(entityType: Item.entityType, entityID: id, payload: payload.canonicalText, scope: scope)
        return try store(request, doubleTapKey: "item/\(id)\n\(scope)\n\(event.payload)") {
            try requireLiveItem(id)
            return event
        }
    }

    func undoItem(id: String, _ request: HTTPRequest) throws -> HTTPResponse {
        let scope = try writableScope(try Self.scope(request))
        _ = try requireItem(id)
        let key = request.headers["idempotency-key"]
        // Not a double tap when repeated: each undo cancels another event.
        let stored = try timedAppend {
            try $0.undo(entityType: Item.entityType, entityID: id, scope: scope, idempotencyKey: key)
        }
        return .json(201, EventJSON.line(for: stored))
    }

    /// Appends through the sync service (so peers get it at once), honouring
    /// `Idempotency-Key` and the double-tap window.
    private func store(_ request: HTTPRequest, doubleTapKey: String, _ makeEvent: () throws -> NewEvent) throws
        -> HTTPResponse
    {
        let key = request.headers["idempotency-key"]
        if let key, key.isEmpty || key.utf8.count > 256 {
            throw APIError.badRequest("Idempotency-Key must be 1 to 256 bytes")
        }
        // A request with its own key says which write it is: no double-tap guess.
        let stored =
            try key != nil
            ? timedAppend { try $0.append(try makeEvent(), idempotencyKey: key) }
            : doubleTaps.write(key: doubleTapKey) {
                let new = try makeEvent()
                return try timedAppend { try $0.append(new, idempotencyKey: key) }
            }
        return .json(201, EventJSON.line(for: stored))
    }

    /// Runs `append` on the storage writer; the sync node pushes the event
    /// to peers as soon as it is committed. Only a new event counts in the
    /// metrics, not a replay of an idempotency key.
    func timedAppend(_ append: (EventLog) throws -> StoredEvent) throws -> StoredEvent {
        let started = DispatchTime.now().uptimeNanoseconds
        let (stored, isNew) = try storage.write { log in
            let newest = try log.lastOffset()
            let stored = try append(log)
            return (stored, stored.offset > newest)
        }
        guard isNew else { return stored }
        metrics.recordAppend(seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        return stored
    }

    /// What this node's users may write, beyond what the Item domain accepts
    /// from peers (the CLI checks the same): no negative quantity, no blank name.
    private static func checkLocalEdit(_ payload: JSONValue) throws {
        if case .int(let quantity)? = payload["quantity"], quantity < 0 {
            throw APIError.invalidEvent("quantity must be a whole number of 0 or more")
        }
        if let name = payload["name"]?.stringValue, name.trimmingCharacters(in: .whitespaces).isEmpty {
            throw APIError.invalidEvent("name must not be blank")
        }
    }

    /// `?scope=`, else `default`; an empty one is a bad request.
    private static func scope(_ request: HTTPRequest) throws -> String {
        guard let scope = request.query["scope"] else { return FeedID.defaultScope }
        guard !scope.isEmpty else { throw APIError.badRequest("?scope= must name a scope") }
        return scope
    }

    /// `scope` when this replica may write it: not empty, and within its
    /// certificate's write scopes.
    private func writableScope(_ scope: String) throws -> String {
        guard !scope.isEmpty else { throw APIError.invalidEvent("scope must not be empty") }
        try requireWritable(scope)
        return scope
    }

    /// Refuses (`403 scope_not_writable`) a local write, or batch event
    /// `index`, in a scope outside this replica's certificate's write scopes:
    /// its peers would refuse it.
    func requireWritable(_ scope: String, event index: Int? = nil) throws {
        guard let certificate = settings.certificate, !certificate.mayWrite(scope) else { return }
        let allowed = IdentityReport.list(certificate.writeScopes)
        throw APIError(
            403, "scope_not_writable",
            (index.map { "event \($0): " } ?? "")
                + "this replica's certificate does not let it write scope \(scope) (it may write \(allowed))",
            index: index)
    }

    private func requireItem(_ id: String) throws -> Item {
        guard let item = try reads.read({ try $0.projection(Item.self, id: id) }) else {
            throw APIError.notFound("no item \(id)")
        }
        return item
    }

    private func requireLiveItem(_ id: String) throws {
        if try requireItem(id).deleted {
            throw APIError(409, "deleted", "item \(id) is deleted; POST /items/\(id)/undo restores it")
        }
    }
}
