import Foundation
import Replica

/// `/domains`: the declared domains this replica folds, and declaring one
/// (docs/domains.md, docs/http-api.md "Declared entities").
extension DaemonAPI {
    func listDomains() throws -> HTTPResponse {
        let domains = try reads.read { try $0.declaredDomains() }
        return .json(200, JSONValue.object(["domains": .array(domains.map(Self.json))]).canonicalText)
    }

    func domain(_ type: String) throws -> HTTPResponse {
        guard let domain = try reads.read({ try $0.declaredDomains() }).first(where: { $0.entityType == type }) else {
            throw APIError.notFound("no declared domain \(type); declare it with POST /domains")
        }
        return .json(200, Self.json(domain).canonicalText)
    }

    /// The body is a declaration, or `{"declaration":…,"admin_key":HEX,"signature":HEX}`
    /// for one the cluster's admin signed (a declaration event's payload, which
    /// `peerd domain declare --admin-key` sends); `?accept_refold=true` lets a change that refolds existing
    /// entities differently go. `201` with the declared domain and its event.
    func declareDomain(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try Self.jsonObject(request)
        let declared: DeclarationEvent
        do {
            declared =
                body["declaration"] != nil
                ? try DeclarationEvent(wrapped: body) : try DeclarationEvent(declarationJSON: body)
        } catch let error as DeclarationError {
            throw APIError(
                422, "invalid_declaration", "\(error)",
                details: ["path": .string(error.path), "reason": .string(error.reason)])
        }
        let acceptRefold = request.query["accept_refold"] == "true"
        let stored = try storage.write { log in
            do {
                return try log.declare(declared, acceptRefold: acceptRefold)
            } catch let refusal as DeclarationRefusal {
                throw APIError(refusal)
            }
        }
        guard case .object(var members) = Self.json(DeclaredDomain(declared, stored: stored)) else {
            return .json(201, "{}")
        }
        members["event"] = try JSONValue.parse(EventJSON.line(for: stored))
        let object = JSONValue.object(members)
        return .json(201, object.canonicalText)
    }

    /// `{"entity_type","version","scope","declared_by","signed_by","declared_ms","declaration"}`.
    static func json(_ domain: DeclaredDomain) -> JSONValue {
        .object([
            "entity_type": .string(domain.entityType), "version": .int(domain.version),
            "scope": domain.declaration.scope.map { .string($0) } ?? .null,
            "declared_by": .string(domain.declaredBy),
            "signed_by": domain.signedBy.map { .string(Hex.string($0)) } ?? .null,
            "declared_ms": .int(domain.timeMs), "declaration": domain.declarationJSON,
        ])
    }
}

extension APIError {
    /// A local declaration the log refused, with its status and code.
    init(_ refusal: DeclarationRefusal) {
        switch refusal {
        case .builtIn:
            self.init(409, "built_in", refusal.description)
        case .versionNotNewer(_, let held, _):
            self.init(409, "version_not_newer", refusal.description, details: ["held_version": .int(held)])
        case .needsAdminSignature:
            self.init(403, "needs_admin_signature", refusal.description)
        case .badSignature:
            self.init(422, "bad_signature", refusal.description)
        case .refoldNeeded(_, let changed, let total):
            self.init(
                409, "refold_needed", refusal.description,
                details: ["changed": .array(changed.map { .string($0) }), "total": .int(Int64(total))])
        }
    }
}
