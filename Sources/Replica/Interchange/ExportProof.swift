/// The lines besides events that a signed export holds, so that an import
/// verifies them as sync does (docs/events.md "Signed exports"):
///
/// ```
/// {"base":{"link":"<64 hex>","replica_id":"a","scope":"default","seq":4}}
/// {"certificate":"<hex of the certificate's bytes>"}
/// {"signed_head":{"link":"<64 hex>","replica_id":"a","scope":"default","seq":5,"signature":"<128 hex>"}}
/// ```
public enum ExportProof: Hashable, Sendable {
    case certificate([UInt8])
    case signedHead(SignedHead)
    /// Where an incremental export's feed continues from: the seq before
    /// its first event and the chain link there (with the origin's
    /// signature when the exporter held one at that seq).
    case base(SignedHead)

    /// The line, in canonical JSON (keys sorted).
    public var line: String {
        switch self {
        case .certificate(let bytes):
            return JSONValue.object(["certificate": .string(Hex.string(bytes))]).canonicalText
        case .signedHead(let head):
            return JSONValue.object(["signed_head": Self.object(head, nullSignature: true)]).canonicalText
        case .base(let base):
            return JSONValue.object(["base": Self.object(base, nullSignature: false)]).canonicalText
        }
    }

    /// A head's fields; without a signature, `"signature":null` or no such field.
    private static func object(_ head: SignedHead, nullSignature: Bool) -> JSONValue {
        var fields: [String: JSONValue] = [
            "replica_id": .string(head.feed.replicaID), "scope": .string(head.feed.scope),
            "seq": .int(Int64(head.seq)), "link": .string(Hex.string(head.link)),
        ]
        if let signature = head.signature {
            fields["signature"] = .string(Hex.string(signature))
        } else if nullSignature {
            fields["signature"] = .null
        }
        return .object(fields)
    }

    /// Whether the line's first bytes name one of these (else it is an event or blank).
    public static func isProofLine(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = bytes.drop { $0 == 0x20 || $0 == 0x09 }
        return start.starts(with: #"{"certificate":"#.utf8) || start.starts(with: #"{"signed_head":"#.utf8)
            || start.starts(with: #"{"base":"#.utf8)
    }

    /// Reads a line that `isProofLine`.
    ///
    /// - Throws: `EventJSONError` naming what is wrong.
    public static func parse(_ line: String) throws -> ExportProof {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            throw EventJSONError(reason: "not JSON: \(error)")
        }
        if case .string(let hex)? = value["certificate"] {
            guard let bytes = Hex.bytes(hex) else { throw EventJSONError(reason: "certificate is not hex") }
            return .certificate(bytes)
        }
        if let base = value["base"] {
            guard let head = head(base, signatureRequired: false) else {
                throw EventJSONError(
                    reason: "base needs replica_id, scope, seq ≥ 1, link (64 hex digits), and a signature, when it "
                        + "has one, of 128 hex digits")
            }
            return .base(head)
        }
        guard let fields = value["signed_head"] else { throw EventJSONError(reason: "neither an event nor a proof") }
        guard let head = head(fields, signatureRequired: true) else {
            throw EventJSONError(
                reason: "signed_head needs replica_id, scope, seq ≥ 1, link (64 hex digits), signature (128 hex digits)"
            )
        }
        return .signedHead(head)
    }

    private static func head(_ fields: JSONValue, signatureRequired: Bool) -> SignedHead? {
        guard case .string(let replicaID)? = fields["replica_id"], case .string(let scope)? = fields["scope"],
            case .int(let seq)? = fields["seq"], seq >= 1, case .string(let linkHex)? = fields["link"],
            let link = Hex.bytes(linkHex), link.count == FeedChain.linkSize
        else { return nil }
        var signature: [UInt8]?
        switch fields["signature"] {
        case .string(let hex)?:
            guard let bytes = Hex.bytes(hex), bytes.count == FeedChain.signatureSize else { return nil }
            signature = bytes
        case nil, .null?:
            guard !signatureRequired else { return nil }
        default:
            return nil
        }
        return SignedHead(
            feed: FeedID(replicaID: replicaID, scope: scope), seq: UInt64(seq), link: link, signature: signature)
    }
}

extension EventLog {
    /// Keeps each signed head whose link is this replica's own link at its
    /// seq (the events it signs are the ones held), so that events imported
    /// from a signed export are served on with their proof; returns how many.
    @discardableResult
    public func adoptSignedHeads(_ heads: [SignedHead]) throws -> Int {
        try write { try adoptInTransaction(heads) }
    }

    @discardableResult
    func adoptInTransaction(_ heads: [SignedHead]) throws -> Int {
        var adopted = 0
        for head in heads where head.signature != nil {
            guard let row = try feedRowID(head.feed, create: false), case let held = try headSeq(feedRow: row),
                head.seq <= held, try link(of: head.feed, feedRow: row, at: head.seq) == head.link
            else { continue }
            if head.seq == held {
                try setHead(held, link: head.link, feedRow: row, signed: head)
            } else {
                try keepSignedPoint(head, feedRow: row)
            }
            adopted += 1
        }
        return adopted
    }
}
