import Foundation
import Replica
import SyncProtocol

/// What `peerd import` checks before it stores anything, as sync does
/// (docs/events.md "Signed exports"): every feed of the file is one run
/// from seq 1 whose chain ends at a head its origin signed, with a key
/// from a certificate this replica trusts; only this replica's own feeds
/// may come without one (it is their origin and signs them as it stores them).
struct ImportVerification {
    /// Per feed: the last seq read, its chain link, and the line of its first event.
    private var chains: [FeedID: (seq: UInt64, link: [UInt8], firstLine: Int)] = [:]
    private(set) var heads: [(head: SignedHead, line: Int)] = []
    private(set) var certificates: [Certificate] = []
    private var failure: String?

    /// Takes the file's lines in order.
    mutating func take(_ event: Event, line: Int) {
        guard failure == nil else { return }
        let chain = chains[event.feed] ?? (0, FeedChain.genesis, line)
        guard event.seq == chain.seq + 1 else {
            failure =
                "line \(line): feed \(event.feed) jumps from seq \(chain.seq) to \(event.seq); a signed export "
                + "holds each feed from seq 1 in order"
            return
        }
        // The chain covers the event as the log stores it (one the ingest refuses fails its feed's head).
        chains[event.feed] = (
            event.seq, FeedChain.link(after: chain.link, EventLog.canonical(event) ?? event), chain.firstLine
        )
    }

    mutating func take(_ proof: ExportProof, line: Int) throws {
        switch proof {
        case .signedHead(let head): heads.append((head, line))
        case .certificate(let bytes):
            do {
                certificates.append(try Certificate(bytes: bytes))
            } catch {
                failure = failure ?? "line \(line): \(error)"
            }
        }
    }

    /// Throws, naming the line, unless every feed verifies. `keys` are the
    /// keys this replica already trusts; `adminKey` decides which of the
    /// file's certificates add to them (the admin's; in an open cluster,
    /// self-signed ones).
    func check(replicaID: String, keys known: FeedKeys, adminKey: [UInt8]?) throws {
        if let failure { throw CommandError(failure + "; nothing was imported") }
        var keys = known
        for certificate in certificates where certificate.adminKey == (adminKey ?? certificate.publicKey) {
            keys.add(certificate.publicKey, for: certificate.replicaID)
        }
        var signed: Set<FeedID> = []
        for (head, line) in heads {
            guard let chain = chains[head.feed], chain.seq == head.seq, chain.link == head.link else {
                throw CommandError(
                    "line \(line): the signed head of feed \(head.feed) at seq \(head.seq) does not match the "
                        + "file's events of that feed (altered, reordered or cut); nothing was imported")
            }
            guard head.isSigned(byOneOf: keys.keys(for: head.feed)) else {
                throw CommandError(
                    "line \(line): the head of feed \(head.feed) is not signed by a key this replica trusts for "
                        + "\(head.feed.origin) (forged, or no certificate of it); nothing was imported")
            }
            signed.insert(head.feed)
        }
        for (feed, chain) in chains.sorted(by: { $0.value.firstLine < $1.value.firstLine })
        where !signed.contains(feed) && feed.origin != replicaID {
            throw CommandError(
                "line \(chain.firstLine): the events of feed \(feed) come without its origin's signed head; "
                    + "import them from a `peerd export` of a replica that holds them signed; nothing was imported")
        }
    }
}
