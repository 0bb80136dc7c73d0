/// Revocations: an admin-signed "replica R may no longer sync", gossiped to
/// every peer like an event (docs/identity.md, "Revocation").
extension SyncNode {
    /// The revocations this node holds, by replica id.
    public var revocations: [Revocation] { revoked.values.sorted { $0.replicaID < $1.replicaID } }

    /// Revocations installed here (`from: nil`) or sent by the peer on
    /// `from`: each new one signed by this cluster's admin key is kept, the
    /// revoked replica's sessions end, every other peer hears of it, and the
    /// shell stores it (`.revoked`). In an open cluster (no admin key) they
    /// are ignored: nothing vouches for them.
    public mutating func learn(_ learned: [Revocation], from source: ConnectionID?, now: Milliseconds) -> [Effect] {
        guard let adminKey = configuration.session.trust.adminKey else {
            emit(LogRecord(.debug, "ignored revocations: this replica has no certificate", []))
            return []
        }
        var fresh: [Revocation] = []
        for revocation in learned where revoked[revocation.replicaID] == nil {
            guard revocation.adminKey == adminKey else {
                emit(
                    LogRecord(
                        .warning, "ignored a revocation signed by another admin key",
                        [("replica", revocation.replicaID), ("admin_key", Hex.string(revocation.adminKey))]))
                continue
            }
            revoked[revocation.replicaID] = revocation
            fresh.append(revocation)
            emit(
                LogRecord(
                    .warning, "replica revoked",
                    [("replica", revocation.replicaID), ("revoked_at", IdentityError.time(revocation.revokedMs))]))
        }
        guard !fresh.isEmpty else { return [] }
        var effects: [Effect] = [.revoked(fresh)]
        for id in sessions.keys.sorted() {
            guard let peer = sessions[id]?.peer else { continue }
            if revoked[peer.replicaID] != nil {
                effects += refuseRevoked(peer.replicaID, on: id)
            } else if id != source {
                effects.append(.send(id, .revocations(fresh)))
            }
        }
        return effects
    }

    /// Ends the session of a revoked replica, saying why.
    mutating func refuseRevoked(_ replicaID: String, on id: ConnectionID) -> [Effect] {
        guard let revocation = revoked[replicaID] else { return [] }
        let reason = "refused: \(IdentityError.revoked(replicaID: replicaID, revokedMs: revocation.revokedMs))"
        manager.noteRefusal(id, reason: reason)
        return [.send(id, .goodbye(reason: reason)), .close(id, reason: reason)]
    }

    /// The batch without events of revoked replicas' feeds, which are
    /// counted and logged: "refuses its later events everywhere".
    mutating func withoutRevoked(_ batch: EventBatch, on id: ConnectionID) -> EventBatch {
        guard !revoked.isEmpty else { return batch }
        var kept = batch
        kept.events = batch.events.filter { revoked[SyncSession.origin(of: $0.feed)] == nil }
        let refused = batch.events.count - kept.events.count
        if refused > 0 {
            counters.eventsRejectedRevoked += refused
            emit(
                LogRecord(
                    .warning, "refused events of revoked replicas",
                    [("conn", "\(id)"), ("peer", sessions[id]?.peer?.replicaID ?? "?"), ("events", "\(refused)")]))
        }
        return kept
    }
}
