import Replica
import SyncProtocol

/// Which of the certificates a log keeps a replica no longer needs
/// (docs/identity.md, "Pruned certificates"): those of revoked replicas and
/// those expired more than `longExpiredMs` ago, unless one is still the only
/// way to verify feeds the log holds. A kept certificate gives the key that
/// verifies its replica's feeds and the scopes they may be written in, for
/// this replica and for every peer it passes them on to; so a lapsed one
/// stays while the log holds a feed of its replica, unless a current
/// certificate of the same replica and key covers its write scopes.
///
/// ```swift
/// let retention = CertificateRetention(ownReplicaID: log.replicaID, revoked: ["3f0c…"], nowMs: now)
/// let prune = retention.prunable(kept, feedOrigins: try log.feedOrigins())
/// ```
public struct CertificateRetention: Sendable {
    /// How long after its expiry a certificate is long-expired: 30 days.
    public static let longExpiredMs: UInt64 = 30 * 86_400_000

    /// This replica: its own certificate is never pruned.
    public var ownReplicaID: String
    /// The replicas revoked by the cluster's admin key.
    public var revoked: Set<String>
    /// Now, on the replica's wall clock (ms since 1970).
    public var nowMs: UInt64

    public init(ownReplicaID: String, revoked: Set<String>, nowMs: UInt64) {
        self.ownReplicaID = ownReplicaID
        self.revoked = revoked
        self.nowMs = nowMs
    }

    /// Revoked, or expired more than `longExpiredMs` ago.
    public func hasLapsed(_ certificate: Certificate) -> Bool {
        if revoked.contains(certificate.replicaID) { return true }
        guard let expiresMs = certificate.expiresMs else { return false }
        return nowMs >= expiresMs &+ Self.longExpiredMs
    }

    /// The certificates of `kept` to remove, given the origins of the
    /// feeds the log holds.
    public func prunable(_ kept: [Certificate], feedOrigins: Set<String>) -> [Certificate] {
        kept.filter { certificate in
            guard certificate.replicaID != ownReplicaID, hasLapsed(certificate) else { return false }
            guard feedOrigins.contains(certificate.replicaID) else { return true }
            return kept.contains { other in
                other != certificate && other.replicaID == certificate.replicaID
                    && other.publicKey == certificate.publicKey && !hasLapsed(other)
                    && certificate.writeScopes.allSatisfy { other.mayWrite($0) }
            }
        }
    }
}
