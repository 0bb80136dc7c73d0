/// A declaration as it travels: an event of entity type `peersync/domain`
/// whose entity id is the declared type, in the declaring replica's feed of
/// scope `peersync/domains` (docs/domains.md "How declarations travel"):
///
/// ```json
/// {"admin_key":"8a88…","declaration":{…},"signature":"5f1c…","type":"Declared"}
/// ```
///
/// `signature` is the Ed25519 signature by `admin_key` of
/// `"peersync/1 domain declaration"` followed by the declaration's
/// canonical JSON; both are absent in a declaration nobody signed.
public struct DeclarationEvent: Hashable, Sendable {
    /// The entity type of declaration events.
    public static let entityType = "peersync/domain"
    /// The feed scope declarations are written in; every session shares it.
    public static let scope = "peersync/domains"
    /// The payload `type`.
    public static let type = "Declared"
    static let signingContext = Array("peersync/1 domain declaration".utf8)

    public var declaration: DomainDeclaration
    /// The declaration's JSON as it was written: what the signature covers.
    public var declarationJSON: JSONValue
    /// The admin key that signed it and the signature, when it is signed.
    public var adminKey: [UInt8]?
    public var signature: [UInt8]?

    /// The bytes an admin signs for `declaration` (its canonical JSON).
    public static func signingMessage(_ declaration: JSONValue) -> [UInt8] {
        signingContext + Array(declaration.canonicalText.utf8)
    }

    public init(declarationJSON: JSONValue, adminKey: [UInt8]? = nil, signature: [UInt8]? = nil) throws {
        declaration = try DomainDeclaration(json: declarationJSON)
        self.declarationJSON = declarationJSON
        self.adminKey = adminKey
        self.signature = signature
    }

    /// The event's payload, canonical.
    public var payload: String {
        var members: [String: JSONValue] = ["type": .string(Self.type), "declaration": declarationJSON]
        if let adminKey, let signature {
            members["admin_key"] = .string(Hex.string(adminKey))
            members["signature"] = .string(Hex.string(signature))
        }
        return JSONValue.object(members).canonicalText
    }

    /// The declaration a stored event holds, or nil when it holds none that
    /// counts: not in a feed of scope `peersync/domains`, not a `Declared` payload, a declaration that does not check,
    /// an entity id that is not the declared type, a signature that does
    /// not verify, or (with an admin key to trust) one that key did not sign.
    static func counting(_ event: Event, trust: DomainTrust) -> DeclarationEvent? {
        guard event.entityType == entityType, event.feed.scope == scope,
            let value = try? JSONValue.parse(event.payload),
            case .string(type)? = value["type"], let declarationJSON = value["declaration"],
            let declared = try? DeclarationEvent(
                declarationJSON: declarationJSON,
                adminKey: value["admin_key"]?.stringValue.flatMap(Hex.bytes),
                signature: value["signature"]?.stringValue.flatMap(Hex.bytes)),
            declared.declaration.entityType == event.entityID
        else { return nil }
        if value["signature"] != nil || value["admin_key"] != nil {
            guard let key = declared.adminKey, let signature = declared.signature,
                FeedChain.verify(signature: signature, of: signingMessage(declarationJSON), publicKey: key)
            else { return nil }
        }
        if case .admin(let trusted) = trust, declared.adminKey != trusted { return nil }
        return declared
    }
}

/// Whose declarations count (docs/domains.md "Who may declare"): in an open
/// cluster every declaration that checks, in a cluster with an admin key
/// only those that key signed. Replicas of one cluster share it, so they
/// count the same declarations.
public enum DomainTrust: Hashable, Sendable {
    case open
    case admin([UInt8])
}
