import Foundation
import Replica

/// `/entities/{type}/{id}/…`: claim, release, and what sessions decided
/// (docs/sessions.md, docs/http-api.md "Sessions").
extension DaemonAPI {
    /// The default and largest wait of a claim for a relay's answer.
    static let claimWaitMs = (default: 5_000, maximum: 60_000)

    func sessionRoute(_ request: HTTPRequest, type: String, id: String, action: String) throws -> HTTPResponse {
        switch action {
        case "claim":
            guard request.method == "POST" else { throw methodNotAllowed(request, "POST") }
            return try claim(request, type: type, id: id)
        case "release":
            guard request.method == "POST" else { throw methodNotAllowed(request, "POST") }
            return try release(request, type: type, id: id)
        case "session":
            guard request.method == "GET" else { throw methodNotAllowed(request, "GET") }
            let session = try reads.read { try $0.session(entityType: type, entityID: id) }
            return .json(200, SessionJSON.session(session).canonicalText)
        case "dropped":
            guard request.method == "GET" else { throw methodNotAllowed(request, "GET") }
            let (session, history) = try reads.read {
                (try $0.session(entityType: type, entityID: id), try $0.events(entityType: type, entityID: id))
            }
            return .json(200, SessionJSON.dropped(session, history: history))
        default:
            throw APIError.notFound("no such resource: \(request.path)")
        }
    }

    /// `{"takeover":true,"wait_ms":N}` (both optional).
    private func claim(_ request: HTTPRequest, type: String, id: String) throws -> HTTPResponse {
        let body = try optionalBody(request)
        let takeover = try flag(body, "takeover")
        var waitMs = Self.claimWaitMs.default
        if let value = body["wait_ms"] {
            guard case .int(let number) = value, number >= 0, number <= Self.claimWaitMs.maximum else {
                throw APIError.badRequest("wait_ms must be a whole number from 0 to \(Self.claimWaitMs.maximum)")
            }
            waitMs = Int(number)
        }
        switch try claims.claim(entityType: type, entityID: id, takeover: takeover, waitMs: waitMs) {
        case .held(let claim, let mode, let grantedBy):
            var object: [String: JSONValue] = [
                "entity_type": .string(type), "entity_id": .string(id), "holder": .string(reads.replicaID),
                "mode": .string(mode.rawValue), "claim": .string(claim.eventID.uuidString.lowercased()),
            ]
            object["granted_by"] = grantedBy.map { .string($0) } ?? .null
            return .json(200, JSONValue.object(object).canonicalText)
        case .refused(let requestEvent, let holder):
            let requestID = JSONValue.string(requestEvent.eventID.uuidString.lowercased())
            guard let holder else {
                throw APIError(
                    409, "claim_expired", "no relay answered the claim of \(type) \(id) in time; claim again",
                    details: ["request": requestID])
            }
            throw APIError(
                409, "claim_refused", "a relay refused the claim of \(type) \(id): \(holder) holds it",
                details: ["holder": .string(holder), "request": requestID])
        case .pending(let requestEvent):
            throw APIError(
                504, "claim_pending",
                "no relay answered the claim of \(type) \(id) within \(waitMs) ms; the request stands, see "
                    + "GET /entities/\(type)/\(id)/session",
                details: ["request": .string(requestEvent.eventID.uuidString.lowercased())])
        }
    }

    /// `{"force":true}` (optional): release for whoever holds it.
    private func release(_ request: HTTPRequest, type: String, id: String) throws -> HTTPResponse {
        let force = try flag(try optionalBody(request), "force")
        let stored = try storage.write { try $0.release(entityType: type, entityID: id, force: force) }
        return .json(201, EventJSON.line(for: stored))
    }

    private func optionalBody(_ request: HTTPRequest) throws -> [String: JSONValue] {
        guard !request.body.isEmpty else { return [:] }
        guard case .object(let object) = try Self.jsonObject(request) else { return [:] }
        return object
    }

    private func flag(_ body: [String: JSONValue], _ name: String) throws -> Bool {
        guard let value = body[name] else { return false }
        guard case .bool(let flag) = value else { throw APIError.badRequest("\(name) must be true or false") }
        return flag
    }

    func methodNotAllowed(_ request: HTTPRequest, _ method: String) -> APIError {
        APIError(405, "method_not_allowed", "\(request.method) is not allowed on \(request.path); allowed: \(method)")
    }
}

/// The JSON of session reports, as the API and `peerd session`/`dropped --json` print them.
enum SessionJSON {
    static func session(_ session: EntitySession) -> JSONValue {
        func id(_ uuid: UUID?) -> JSONValue { uuid.map { .string($0.uuidString.lowercased()) } ?? .null }
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        let claims: [JSONValue] = session.claims.map { claim in
            .object([
                "event_id": id(claim.event.eventID), "claimant": .string(claim.claimant),
                "writer": .string(claim.event.writer), "time_ms": .int(claim.event.timeMs),
                "stood": .bool(claim.refusal == nil), "refusal": text(claim.refusal),
                "previous_holder": text(claim.previousHolder),
            ])
        }
        let requests: [JSONValue] = session.requests.map { request in
            var answer = JSONValue.null
            switch request.answer.flatMap({ SessionEvent.parse($0.payload) }) {
            case .claimGranted: answer = .string(request.grantStood == true ? "granted" : "overruled")
            case .claimRefused(_, let holder): answer = .string(holder == nil ? "expired" : "refused")
            default: break
            }
            return .object([
                "event_id": id(request.event.eventID), "requester": .string(request.event.writer),
                "answer": answer, "answered_by": text(request.answer?.writer),
            ])
        }
        let mode: JSONValue =
            session.state.holder == nil
            ? .null : .string((session.state.granted ? ClaimDesk.Mode.granted : .optimistic).rawValue)
        return .object([
            "entity_type": .string(session.entityType), "entity_id": .string(session.entityID),
            "holder": text(session.state.holder), "claim": id(session.state.claim), "mode": mode,
            "claims": .array(claims), "requests": .array(requests), "dropped_count": .int(Int64(session.dropped.count)),
        ])
    }

    /// `{"entity_type","entity_id","holder","count","dropped":[{"holder":…,"event":{…}}]}`,
    /// each event as `GET /log` shows it.
    static func dropped(_ session: EntitySession, history: [StoredEvent]) -> String {
        let stored = Dictionary(history.map { ($0.event.eventID, $0) }, uniquingKeysWith: { first, _ in first })
        let rows = session.dropped.map { dropped -> String in
            let line =
                stored[dropped.event.eventID].map { EventJSON.line(for: $0) }
                ?? EventJSON.line(for: dropped.event, offset: nil, arrivalTimeMs: nil)
            return "{\"event\":\(line),\"holder\":\(EventJSON.quoted(dropped.holder))}"
        }
        let holder = session.state.holder.map { EventJSON.quoted($0) } ?? "null"
        return "{\"count\":\(rows.count),\"dropped\":[\(rows.joined(separator: ","))],"
            + "\"entity_id\":\(EventJSON.quoted(session.entityID)),\"entity_type\":\(EventJSON.quoted(session.entityType)),"
            + "\"holder\":\(holder)}"
    }
}
