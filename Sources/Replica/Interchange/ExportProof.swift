/// The lines a signed export holds after its events, so that an import
/// verifies them as sync does (docs/events.md "Signed exports"):
///
/// ```
/// {"certificate":"<hex of the certificate's bytes>"}
/// {"signed_head":{"link":"<64 hex>","replica_id":"a","scope":"default","seq":5,"signature":"<128 hex>"}}
/// ```
public enum ExportProof: Hashable, Sendable {
    case certificate([UInt8])
    case signedHead(SignedHead)

    /// The line, in canonical JSON (keys sorted).
    public var line: String {
        switch self {
        case .certificate(let bytes):
            return JSONValue.object(["certificate": .string(Hex.string(bytes))]).canonicalText
        case .signedHead(let head):
            return JSONValue.object([
                "signed_head": .object([
                    "replica_id": .string(head.feed.replicaID), "scope": .string(head.feed.scope),
                    "seq": .int(Int64(head.seq)), "link": .string(Hex.string(head.link)),
                    "signature": head.signature.map { .string(Hex.string($0)) } ?? .null,
                ])
            ]).canonicalText
        }
    }

    /// Whether the line's first bytes name one of these (else it is an event or blank).
    public static func isProofLine(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = bytes.drop { $0 == 0x20 || $0 == 0x09 }
        return start.starts(with: #"{"certificate":"#.utf8) || start.starts(with: #"{"signed_head":"#.utf8)
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
        guard let head = value["signed_head"] else { throw EventJSONError(reason: "neither an event nor a proof") }
        guard case .string(let replicaID)? = head["replica_id"], case .string(let scope)? = head["scope"],
            case .int(let seq)? = head["seq"], seq >= 1, case .string(let linkHex)? = head["link"],
            let link = Hex.bytes(linkHex), link.count == FeedChain.linkSize,
            case .string(let signatureHex)? = head["signature"],
            let signature = Hex.bytes(signatureHex), signature.count == FeedChain.signatureSize
        else {
            throw EventJSONError(
                reason: "signed_head needs replica_id, scope, seq ≥ 1, link (64 hex digits), signature (128 hex digits)"
            )
        }
        return .signedHead(
            SignedHead(
                feed: FeedID(replicaID: replicaID, scope: scope), seq: UInt64(seq), link: link, signature: signature))
    }
}

extension EventLog {
    /// Keeps each signed head whose link is this replica's own link at its
    /// seq (the events it signs are the ones held), so that events imported
    /// from a signed export are served on with their proof; returns how many.
    @discardableResult
    public func adoptSignedHeads(_ heads: [SignedHead]) throws -> Int {
        try write {
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
}
