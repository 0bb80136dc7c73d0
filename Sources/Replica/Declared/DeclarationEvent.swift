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

    /// Reads the wrapped form, `{"declaration":…,"admin_key":HEX,"signature":HEX}`
    /// (an event's payload; its `type` is not looked at): the key and the
    /// signature both or neither. The signature is not checked here.
    ///
    /// - Throws: `DeclarationError` naming what is wrong.
    public init(wrapped value: JSONValue) throws {
        guard let declarationJSON = value["declaration"] else {
            throw DeclarationError(path: "declaration", "is missing")
        }
        func hex(_ key: String) throws -> [UInt8]? {
            guard let member = value[key] else { return nil }
            guard let bytes = member.stringValue.flatMap(Hex.bytes) else {
                throw DeclarationError(path: key, "must be hex")
            }
            return bytes
        }
        let (key, signature) = (try hex("admin_key"), try hex("signature"))
        guard (key == nil) == (signature == nil) else {
            throw DeclarationError(
                path: key == nil ? "admin_key" : "signature", "a signed declaration needs admin_key and signature")
        }
        try self.init(declarationJSON: declarationJSON, adminKey: key, signature: signature)
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
            let value = try? JSONValue.parse(event.payload), case .string(type)? = value["type"],
            let declared = try? DeclarationEvent(wrapped: value), declared.declaration.entityType == event.entityID
        else { return nil }
        if let key = declared.adminKey, let signature = declared.signature {
            guard FeedChain.verify(signature: signature, of: signingMessage(declared.declarationJSON), publicKey: key)
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
