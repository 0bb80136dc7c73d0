import Foundation
import Replica
import SyncProtocol

/// What `peerd import` checks before it stores anything, as sync checks a
/// page (docs/events.md "Import"): every feed of the file is one run, from
/// seq 1 or from a `base` line whose seq and link this replica holds, whose
/// chain ends at the head its `signed_head` line names, signed by its
/// origin with a key from a certificate this replica trusts. Only this replica's own feeds may come without one
/// (it is their origin and signs them as it stores them), and, with
/// `--vouch`, the feeds of origins that never signed (docs/identity.md
/// "Vouching for unsigned history"). The file is read once, keeping only
/// each feed's running chain link, so memory does not grow with the file.
struct ImportVerification {
    /// One feed's run as read so far.
    private struct Chain {
        var seq: UInt64
        var link: [UInt8]
        /// The line of its first event, or of its base.
        let firstLine: Int
    }

    private var chains: [FeedID: Chain] = [:]
    /// The file's signed heads, each with its line.
    private var heads: [(head: SignedHead, line: Int)] = []
    private var bases: [(base: SignedHead, line: Int)] = []
    private var certificates: [Certificate] = []
    private var failure: String?

    /// Takes the file's event lines in order.
    mutating func take(_ event: Event, line: Int) {
        guard failure == nil else { return }
        let chain = chains[event.feed] ?? Chain(seq: 0, link: FeedChain.genesis, firstLine: line)
        guard event.seq == chain.seq + 1 else {
            let from = chain.seq == 0 ? "seq 1" : "seq \(chain.seq + 1)"
            failure =
                "line \(line): feed \(event.feed) jumps from seq \(chain.seq) to \(event.seq); an export holds each "
                + "feed in seq order from \(from)"
            return
        }
        // The chain covers the event as the log stores it (one the ingest refuses fails its feed's head).
        chains[event.feed] = Chain(
            seq: event.seq, link: FeedChain.link(after: chain.link, EventLog.canonical(event) ?? event),
            firstLine: chain.firstLine)
    }

    /// Takes the file's other lines in order.
    mutating func take(_ proof: ExportProof, line: Int) {
        guard failure == nil else { return }
        switch proof {
        case .signedHead(let head):
            heads.append((head, line))
        case .base(let base):
            guard chains[base.feed] == nil else {
                failure = "line \(line): the base of feed \(base.feed) comes after events of it; it must come first"
                return
            }
            chains[base.feed] = Chain(seq: base.seq, link: base.link, firstLine: line)
            bases.append((base, line))
        case .certificate(let bytes):
            do {
                certificates.append(try Certificate(bytes: bytes))
            } catch {
                failure = "line \(line): \(error)"
            }
        }
    }

    /// What the check needs of the importing replica.
    struct Replica {
        var replicaID: String
        /// The keys it trusts already: its own and those of the certificates it keeps.
        var keys: FeedKeys
        /// Its admin's key; `nil` in an open cluster.
        var adminKey: [UInt8]?
        /// Origins it holds a certificate of their own for: they sign their feeds.
        var signingOrigins: Set<String>
        /// Its cursor.
        var cursor: VectorCursor
        /// Its chain link of a feed at a seq it holds.
        var link: (FeedID, UInt64) throws -> [UInt8]
        /// `--vouch`: feeds of origins that never signed may come unsigned.
        var vouching = false
    }

    /// The import's plan, or an error naming the first line that does not verify.
    func plan(for replica: Replica) throws -> ImportPlan {
        if let failure { throw Self.refusal(failure) }
        var keys = replica.keys
        let trusted = certificates.filter { $0.adminKey == (replica.adminKey ?? $0.publicKey) }
        for certificate in trusted { keys.add(certificate.publicKey, for: certificate.replicaID) }
        var plan = ImportPlan(certificates: trusted)
        var signed: Set<FeedID> = []
        for (head, line) in heads {
            guard let chain = chains[head.feed], chain.seq == head.seq, chain.link == head.link else {
                throw Self.refusal(
                    "line \(line): the signed head of feed \(head.feed) at seq \(head.seq) does not match the "
                        + "file's events of that feed (altered, reordered or cut)")
            }
            guard head.isSigned(byOneOf: keys.keys(for: head.feed)) else {
                throw Self.refusal(
                    "line \(line): the head of feed \(head.feed) is not signed by a key this replica trusts for "
                        + "\(head.feed.origin) (forged, or no certificate of it)")
            }
            plan.heads.append(head)
            signed.insert(head.feed)
        }
        for (base, line) in bases where base.signature != nil && !base.isSigned(byOneOf: keys.keys(for: base.feed)) {
            throw Self.refusal(
                "line \(line): the base of feed \(base.feed) at seq \(base.seq) is not signed by a key this replica "
                    + "trusts for \(base.feed.origin) (forged, or no certificate of it)")
        }
        try checkBases(against: replica)
        for (feed, chain) in chains.sorted(by: { $0.value.firstLine < $1.value.firstLine })
        where !signed.contains(feed) && feed.origin != replica.replicaID {
            if bases.contains(where: { $0.base.feed == feed && $0.base.seq == chain.seq }) { continue }  // no events
            guard replica.vouching else {
                throw Self.refusal(
                    "line \(chain.firstLine): the events of feed \(feed) come without its origin's signed head; "
                        + "import them from a `peerd export` of a replica that holds them signed, or, for history "
                        + "written before signed feeds or by another system, vouch for it with `peerd import FILE "
                        + "--vouch` (docs/identity.md, \"Vouching for unsigned history\")")
            }
            guard !replica.signingOrigins.contains(feed.origin) else {
                throw Self.refusal(
                    "line \(chain.firstLine): the events of feed \(feed) come unsigned, but \(feed.origin) signs "
                        + "its feeds (this replica holds its certificate), so a vouch cannot cover them; import a "
                        + "signed export of them instead")
            }
            plan.vouched[feed.origin, default: []].append(feed.scope)
        }
        return plan
    }

    /// Every base must be a seq this replica holds, with the same link there.
    private func checkBases(against replica: Replica) throws {
        var missing: [(base: SignedHead, line: Int, held: UInt64)] = []
        for (base, line) in bases {
            let held = replica.cursor[base.feed]
            guard held >= base.seq else {
                missing.append((base, line, held))
                continue
            }
            guard try replica.link(base.feed, base.seq) == base.link else {
                throw Self.refusal(
                    "line \(line): the file continues feed \(base.feed) from seq \(base.seq + 1), but this "
                        + "replica holds another history of it at seq \(base.seq) (the chain links differ): the file "
                        + "was exported from a fork of the feed")
            }
        }
        guard let first = missing.first else { return }
        let others = missing.count > 1 ? " (and \(missing.count - 1) other feed(s) likewise)" : ""
        throw Self.refusal(
            "line \(first.line): this file is an incremental export: it continues feed \(first.base.feed) after "
                + "seq \(first.base.seq), and this replica holds that feed only to seq \(first.held)\(others). "
                + "Import first the export this one follows (or a full export: `peerd export` on the exporting "
                + "replica), or have the exporting replica write one since this replica's cursor: `peerd status` "
                + "here, then `peerd export --since STATUS_FILE` there")
    }

    private static func refusal(_ reason: String) -> CommandError {
        CommandError(reason + "; nothing was imported")
    }
}

/// What `peerd import` does once the file verified.
struct ImportPlan {
    /// The verified signed heads, one per feed: each is kept in the
    /// transaction of the batch that reaches its seq.
    var heads: [SignedHead] = []
    /// The file's certificates that this replica's trust accepts, stored
    /// before any event (a running daemon passes them to its peers first).
    var certificates: [Certificate]
    /// The unsigned feeds of other origins this replica vouches for, as
    /// origin and scopes (`--vouch`).
    var vouched: [String: [String]] = [:]

    /// The vouched feeds.
    var vouchedFeeds: Set<FeedID> {
        Set(vouched.flatMap { origin, scopes in scopes.map { FeedID(replicaID: origin, scope: $0) } })
    }
}
