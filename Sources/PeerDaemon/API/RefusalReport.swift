import Foundation
import Replica
import SyncProtocol

/// A feed refused from a peer, as `GET /status` (`refused_feeds`) and each
/// row of `GET /peers` show it (docs/http-api.md).
struct RefusedFeedReport: Codable, Equatable {
    var replica_id: String
    var scope: String
    /// The replica that sent the events.
    var peer: String
    /// `no_key`, `unsigned`, `no_proof`, `not_one_run`, `invalid` or `bad_signature`.
    var reason: String
    /// Events of the feed refused from that peer since the refusal began.
    var events: Int
    var since_ms: Int64
    var last_ms: Int64
    /// The feed, the peer, why, and what would fix it, in one sentence.
    var message: String

    init(_ refusal: FeedRefusal) {
        replica_id = refusal.feed.replicaID
        scope = refusal.feed.scope
        peer = refusal.peer
        reason = refusal.reason.code
        events = refusal.events
        since_ms = refusal.sinceMs
        last_ms = refusal.lastMs
        message = refusal.message
    }

    /// `peerd status`'s line.
    var text: String { "refused     \(message)" }
}

/// A vouch for unsigned history this replica holds, as `GET /status` and
/// `peerd status` show it (`vouched`; docs/identity.md "Vouching for
/// unsigned history").
struct VouchReport: Codable, Equatable {
    /// The origin whose unsigned feeds were vouched for.
    var replica_id: String
    var scopes: [String]
    /// The replica that vouched, and whose identity key signs those feeds.
    var vouched_by: String
    var key: String
    /// `admin`: the cluster's admin signed the vouch; `self`: the vouching
    /// replica did (an open cluster).
    var signed_by: String
    var admin_key: String
    var issued_ms: UInt64

    init?(_ certificate: Certificate) {
        guard let voucher = certificate.vouchedBy else { return nil }
        replica_id = certificate.replicaID
        scopes = certificate.writeScopes
        vouched_by = voucher
        key = Hex.string(certificate.publicKey)
        signed_by = certificate.isSelfSigned ? "self" : "admin"
        admin_key = Hex.string(certificate.adminKey)
        issued_ms = certificate.issuedMs
    }

    var text: String {
        let signer =
            signed_by == "self"
            ? "self-signed by \(vouched_by) (an open cluster)" : "signed by admin key \(admin_key.prefix(16))…"
        return "vouched     \(replica_id) (scopes \(scopes.joined(separator: ","))): unsigned history that "
            + "\(vouched_by) vouched for at \(IdentityError.time(issued_ms)) and signs with key \(key.prefix(16))…; "
            + signer
    }
}
