import Replica
import SharedStore

/// A request the API refuses: its HTTP status, a stable code and a message.
struct APIError: Error {
    var status: Int
    var code: String
    var message: String
    /// For a refused batch (`POST /events`): the position of the event that was refused.
    var index: Int?
    /// More fields of the error object, e.g. the `holder` of a claimed entity.
    var details: [String: JSONValue] = [:]

    init(_ status: Int, _ code: String, _ message: String, index: Int? = nil, details: [String: JSONValue] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.index = index
        self.details = details
    }

    var response: HTTPResponse { .error(status, code, message, index: index, details: details) }

    static func badRequest(_ message: String) -> APIError { APIError(400, "bad_request", message) }
    static func notFound(_ message: String) -> APIError { APIError(404, "not_found", message) }
    /// 422 `invalid_event`; a message that names a field (`field "site" of …`,
    /// docs/domains.md "Validation") names it in `error.field` too.
    static func invalidEvent(_ message: String, index: Int? = nil, reason: String? = nil) -> APIError {
        var details: [String: JSONValue] = [:]
        let reason = reason ?? message
        if reason.hasPrefix("field \""), let name = reason.dropFirst(7).split(separator: "\"").first {
            details["field"] = .string(String(name))
        }
        return APIError(422, "invalid_event", message, index: index, details: details)
    }

    /// What an event log failure means for the client: its own mistake
    /// (422), a storage fault (507 for a full disk, 503 for the rest: the
    /// replica is degraded, docs/operations.md), or anything else (500).
    static func from(_ error: Error) -> APIError {
        switch error {
        case let error as APIError: return error
        case EventLogError.invalidEvent(let reason): return .invalidEvent(reason)
        case let error as ThinClientBatchError where error.wrongScope:
            return APIError(422, "wrong_scope", "\(error)", index: error.index)
        case let error as ThinClientBatchError:
            return .invalidEvent("\(error)", index: error.index, reason: error.reason)
        case EventLogError.wrongScope: return APIError(422, "wrong_scope", "\(error)")
        case EventLogError.nothingToUndo, EventLogError.undoLimitReached:
            return APIError(422, "cannot_undo", "\(error)")
        case EventLogError.entityHeld(_, _, let holder):
            return APIError(409, "entity_held", "\(error)", details: ["holder": .string(holder)])
        case EventLogError.takenOver(_, _, let holder, let dropped):
            return APIError(
                409, "taken_over", "\(error)",
                details: ["holder": .string(holder), "dropped_own": .int(Int64(dropped))])
        case EventLogError.claimNeedsGrant(_, _, let holder):
            return APIError(409, "claim_needs_grant", "\(error)", details: ["holder": .string(holder)])
        case EventLogError.feedForked(let feed):
            return APIError(
                409, "feed_forked", "\(error)",
                details: ["replica_id": .string(feed.replicaID), "scope": .string(feed.scope)])
        case EventLogError.notHeld(_, _, let holder):
            return APIError(409, "not_holder", "\(error)", details: ["holder": holder.map { .string($0) } ?? .null])
        case SharedStoreError.unavailable:
            // A relay on a shared PostgreSQL stores nothing PostgreSQL has not committed (docs/relay.md).
            return APIError(503, "store_unavailable", "\(error)")
        case let error as EventLogError where error.storageFault?.kind == .diskFull:
            return APIError(507, "disk_full", "\(error)")
        case let error as EventLogError where error.storageFault != nil:
            return APIError(503, "storage_degraded", "\(error)")
        default: return APIError(500, "internal", "\(error)")
        }
    }
}
