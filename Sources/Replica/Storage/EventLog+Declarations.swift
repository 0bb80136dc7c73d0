import Foundation

/// One declared entity type as the log folds it: the declaration that counts.
public struct DeclaredDomain: Hashable, Sendable {
    public var declaration: DomainDeclaration
    /// The declaration's JSON as it was written (what a signature covers).
    public var declarationJSON: JSONValue
    /// The replica whose feed holds the declaring event.
    public var declaredBy: String
    /// The admin key that signed it, when signed.
    public var signedBy: [UInt8]?
    /// The declaring event's time (its hybrid-clock `time_ms`).
    public var timeMs: Int64

    public var entityType: String { declaration.entityType }
    public var version: Int64 { declaration.version }

    /// The domain `stored`, the event `declare` appended for `declared`, makes.
    public init(_ declared: DeclarationEvent, stored: StoredEvent) {
        declaration = declared.declaration
        declarationJSON = declared.declarationJSON
        declaredBy = stored.event.feed.replicaID
        signedBy = declared.signature == nil ? nil : declared.adminKey
        timeMs = stored.event.timeMs
    }

    init(
        declaration: DomainDeclaration, declarationJSON: JSONValue, declaredBy: String, signedBy: [UInt8]?,
        timeMs: Int64
    ) {
        self.declaration = declaration
        self.declarationJSON = declarationJSON
        self.declaredBy = declaredBy
        self.signedBy = signedBy
        self.timeMs = timeMs
    }
}

/// Declared domains in the log (docs/domains.md "How declarations
/// travel"): declarations are events; the one that counts per type is kept
/// in `domains`, and every entity of a type refolds, in the transaction
/// that stores it, when it changes.
extension EventLog {
    /// The declared domains this log folds, by entity type.
    public func declaredDomains() throws -> [DeclaredDomain] {
        try read {
            let statement = try db.statement(
                "SELECT declaration, declared_by, signed_by, time_ms FROM domains ORDER BY entity_type")
            var result: [DeclaredDomain] = []
            while try statement.step() {
                guard let json = try? JSONValue.parse(statement.text(0)),
                    let declaration = try? DomainDeclaration(json: json)
                else { continue }
                result.append(
                    DeclaredDomain(
                        declaration: declaration, declarationJSON: json, declaredBy: statement.text(1),
                        signedBy: statement.isNull(2) ? nil : statement.blob(2), timeMs: statement.int64(3)))
            }
            return result
        }
    }

    /// The version of each declared domain this log folds, by entity type:
    /// from the declarations it has loaded, without reading them again.
    public func domainVersions() throws -> [String: Int64] {
        try read {
            try refreshDeclaredDomains()
            return domains.compactMapValues { $0.plan?.declaration.version }
        }
    }

    /// The domain this log folds `entityType` with, Swift or declared; nil when it folds none.
    public func domain(of entityType: String) throws -> Domain? {
        try read {
            try refreshDeclaredDomains()
            return domains[entityType]
        }
    }

    /// Whose declarations this log counts.
    public func declarationTrust() throws -> DomainTrust {
        try read {
            try refreshDeclaredDomains()
            return domainTrust
        }
    }

    // MARK: - Inside transactions

    /// Loads the declared domains again when another connection (or a
    /// rolled-back write) changed them since; the tail's fold is then
    /// dropped, since it was folded under the old declarations.
    func refreshDeclaredDomains() throws {
        let generation = Int64(try EventLog.readMeta(db, "domains_generation") ?? "0") ?? 0
        guard generation != declaredGeneration else { return }
        let trustText = try EventLog.readMeta(db, "domains_trust") ?? "open"
        domainTrust = trustText == "open" ? .open : Hex.bytes(trustText).map(DomainTrust.admin) ?? .open
        var fresh = domains.filter { swiftDomainTypes.contains($0.key) }
        let statement = try db.statement("SELECT declaration FROM domains")
        while try statement.step() {
            guard let json = try? JSONValue.parse(statement.text(0)),
                let declaration = try? DomainDeclaration(json: json), !swiftDomainTypes.contains(declaration.entityType)
            else { continue }
            fresh[declaration.entityType] = Domain(declared: FoldPlan(declaration))
        }
        if declaredGeneration != nil {
            pending = nil
            writtenRows = WrittenRows()
        }
        domains = fresh
        declaredGeneration = generation
    }

    /// The declarations among `inserted` that count and win over the one
    /// held for their type (a higher version; at an equal version, a later
    /// event in canonical order) are kept in `domains`; returns the types
    /// whose declaration changed. The rule depends on the events alone, so
    /// every replica that holds them keeps the same declarations.
    func applyDeclarations(_ inserted: [InsertedEvent]) throws -> Set<String> {
        guard inserted.contains(where: { $0.stored.event.entityType == DeclarationEvent.entityType }) else { return [] }
        try refreshDeclaredDomains()
        var changed: Set<String> = []
        for item in inserted where item.stored.event.entityType == DeclarationEvent.entityType {
            if try keepIfWinning(item.stored.event) { changed.insert(item.stored.event.entityID) }
        }
        if !changed.isEmpty { try moveGeneration() }
        return changed
    }

    /// Keeps `event`'s declaration when it counts and wins; true when it did.
    private func keepIfWinning(_ event: Event) throws -> Bool {
        guard !swiftDomainTypes.contains(event.entityID),
            let declared = DeclarationEvent.counting(event, trust: domainTrust)
        else { return false }
        let held = try db.statement("SELECT version, time_ms, seq, event_id FROM domains WHERE entity_type = ?")
        try held.bind([.text(event.entityID)])
        if try held.step(), let eventID = held.uuid(3) {
            let heldKey = (
                held.int64(0), EventOrderKey(timeMs: held.int64(1), seq: UInt64(held.int64(2)), eventID: eventID)
            )
            let version = declared.declaration.version
            guard heldKey.0 < version || (heldKey.0 == version && heldKey.1 < event.orderKey) else { return false }
        }
        try db.statement(
            """
            INSERT OR REPLACE INTO domains (entity_type, version, declaration, time_ms, seq, event_id, declared_by, signed_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run([
            .text(event.entityID), .int(declared.declaration.version), .text(declared.declarationJSON.canonicalText),
            .int(event.timeMs), .int(Int64(event.seq)), .uuid(event.eventID), .text(event.feed.replicaID),
            declared.adminKey.map { .blob($0) } ?? .null,
        ])
        domains[event.entityID] = Domain(declared: FoldPlan(declared.declaration))
        return true
    }

    /// Moves `meta.domains_generation`, so other connections reload.
    private func moveGeneration() throws {
        let next = (Int64(try EventLog.readMeta(db, "domains_generation") ?? "0") ?? 0) + 1
        try db.statement("UPDATE meta SET value = ? WHERE key = 'domains_generation'").run([.text(String(next))])
        declaredGeneration = next
    }

    /// Counts the declarations again under `trust` when the file counted
    /// them under another (a replica that joined a cluster with an admin key).
    func ensureDomainTrust(_ trust: DomainTrust) throws {
        let text: String
        switch trust {
        case .open: text = "open"
        case .admin(let key): text = Hex.string(key)
        }
        let held = try read { try EventLog.readMeta(db, "domains_trust") }
        guard held != text else { return }
        try write {
            let tail = try syncPending()
            try db.statement("UPDATE meta SET value = ? WHERE key = 'domains_trust'").run([.text(text)])
            domainTrust = trust
            let before = Set(domains.keys).subtracting(swiftDomainTypes)
            try db.execute("DELETE FROM domains")
            for type in before { domains[type] = nil }
            try forEachHistory(of: DeclarationEvent.entityType, heads: pending?.heads ?? [:], in: tail) {
                _, _, _, history in
                for stored in history { _ = try keepIfWinning(stored.event) }
            }
            try moveGeneration()
            try refoldDeclaredTypes(before.union(domains.keys).subtracting(swiftDomainTypes), in: tail)
        }
    }
}

/// Why a local declaration was refused (docs/domains.md "Declaring").
public enum DeclarationRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// The entity type is one this replica folds in Swift.
    case builtIn(entityType: String)
    /// The version is not above the one held.
    case versionNotNewer(entityType: String, held: Int64, given: Int64)
    /// The cluster has an admin key, and the declaration is not signed by it.
    case needsAdminSignature(adminKey: [UInt8])
    /// A signature that does not verify with the key it names.
    case badSignature
    /// Existing entities would fold to other states; the declaration goes
    /// only when that is accepted.
    case refoldNeeded(entityType: String, changed: [String], total: Int)

    public var description: String {
        switch self {
        case .builtIn(let type):
            "\(type) is folded by this replica's own code; declare a new entity type"
        case .versionNotNewer(let type, let held, let given):
            "\(type) is declared at version \(held); a new declaration needs a higher version than that, not \(given)"
        case .needsAdminSignature(let key):
            "this cluster has an admin key (\(Hex.string(key).prefix(16))…): only a declaration that key signs counts; "
                + "sign it with `peerd domain declare FILE --admin-key FILE`"
        case .badSignature:
            "the declaration's signature does not verify with the admin key it names"
        case .refoldNeeded(let type, let changed, let total):
            "this declaration would change the state of \(changed.count) of the \(total) \(type) entities (e.g. "
                + "\(changed.prefix(3).joined(separator: ", "))) when they refold under it; declare it again with "
                + "the refold accepted (`--accept-refold`, or `?accept_refold=true`) if that is what you want"
        }
    }
}

extension EventLog {
    /// Declares an entity type, or a new version of one, from this
    /// replica: checked against the declaration held (a higher version),
    /// the cluster's trust (its admin's signature where it has an admin
    /// key), and, unless `acceptRefold`, that no existing entity would fold
    /// to another state. Appended as a `Declared` event in this replica's
    /// feed of scope `peersync/domains`; every entity of the type refolds
    /// in the same transaction.
    ///
    /// ```swift
    /// let declared = try DeclarationEvent(declarationJSON: try JSONValue.parse(text))
    /// try log.declare(declared)
    /// ```
    @discardableResult
    public func declare(_ declared: DeclarationEvent, acceptRefold: Bool = false) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            let type = declared.declaration.entityType
            guard !swiftDomainTypes.contains(type) else { throw DeclarationRefusal.builtIn(entityType: type) }
            if let key = declared.adminKey, let signature = declared.signature,
                !FeedChain.verify(
                    signature: signature, of: DeclarationEvent.signingMessage(declared.declarationJSON), publicKey: key)
            {
                throw DeclarationRefusal.badSignature
            }
            if case .admin(let trusted) = domainTrust, declared.adminKey != trusted || declared.signature == nil {
                throw DeclarationRefusal.needsAdminSignature(adminKey: trusted)
            }
            if let held = domains[type]?.plan {
                guard held.declaration.version < declared.declaration.version else {
                    throw DeclarationRefusal.versionNotNewer(
                        entityType: type, held: held.declaration.version, given: declared.declaration.version)
                }
                // An accepted refold needs no comparison: the refold runs once, below.
                if !acceptRefold {
                    let changes = try stateChanges(under: Domain(declared: FoldPlan(declared.declaration)), in: tail)
                    if !changes.changed.isEmpty {
                        throw DeclarationRefusal.refoldNeeded(
                            entityType: type, changed: changes.changed, total: changes.total)
                    }
                }
            }
            let event = NewEvent(
                entityType: DeclarationEvent.entityType, entityID: type, payload: declared.payload,
                scope: DeclarationEvent.scope)
            return try appendInTransaction([event], declaring: true, in: tail)[0]
        }
    }
}
