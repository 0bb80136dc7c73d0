import Replica

/// Trust while sessions run: revocations (an admin-signed "replica R may no
/// longer sync", gossiped to every peer like an event) and certificates that
/// expire mid-session (docs/identity.md).
extension SyncNode {
    /// The revocations this node holds, by replica id.
    public var revocations: [Revocation] { revoked.values.sorted { $0.replicaID < $1.replicaID } }

    /// Revocations installed here (`from: nil`) or sent by the peer on
    /// `from`: each new one signed by this cluster's admin key is kept, the
    /// revoked replica's sessions end, every other peer hears of it, and the
    /// shell stores it (`.revoked`). In an open cluster (no admin key) they
    /// are ignored: nothing vouches for them.
    public mutating func learn(_ learned: [Revocation], from source: ConnectionID?, now: Milliseconds) -> [Effect] {
        guard configuration.session.trust.adminKey != nil else {
            emit(
                LogRecord(
                    .debug, .revocationIgnored, "ignored revocations: this replica has no certificate",
                    [("cause", "no_certificate")]))
            return []
        }
        var fresh: [Revocation] = []
        for revocation in learned where keep(revocation) {
            fresh.append(revocation)
            let own = revocation.replicaID == configuration.hello.replicaID
            emit(
                LogRecord(
                    own ? .error : .warning, own ? .thisReplicaRevoked : .replicaRevoked,
                    own ? "this replica was revoked by the cluster's admin: every peer refuses it" : "replica revoked",
                    [("replica", revocation.replicaID), ("revoked_at", IdentityError.time(revocation.revokedMs))]))
        }
        guard !fresh.isEmpty else { return [] }
        var effects: [Effect] = [.revoked(fresh)]
        // Their addresses are not dialed again.
        for target in manager.targets.values where target.replicaID.map({ revoked[$0] != nil }) ?? false {
            manager.removePeer(target.address)
        }
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

    /// Keeps `revocation` when it is new and signed by this cluster's admin
    /// key; one signed by another key is logged and dropped.
    mutating func keep(_ revocation: Revocation) -> Bool {
        guard revoked[revocation.replicaID] == nil else { return false }
        guard revocation.adminKey == configuration.session.trust.adminKey else {
            emit(
                LogRecord(
                    .warning, .revocationIgnored, "ignored a revocation signed by another admin key",
                    [
                        ("cause", "foreign_admin_key"), ("replica", revocation.replicaID),
                        ("admin_key", Hex.string(revocation.adminKey)),
                    ]))
            return false
        }
        revoked[revocation.replicaID] = revocation
        return true
    }

    /// Ends the sessions whose peer's certificate has expired since its
    /// hello (checked once per anti-entropy round).
    mutating func endExpiredSessions() -> [Effect] {
        guard configuration.session.trust.adminKey != nil else { return [] }
        let nowMs = configuration.session.trust.wallClockMs()
        var effects: [Effect] = []
        for id in sessions.keys.sorted() {
            guard let peer = sessions[id]?.peer, let expiresMs = sessions[id]?.peerIdentity?.certificate?.expiresMs,
                nowMs >= expiresMs
            else { continue }
            let reason = "refused: \(IdentityError.certificateExpired(replicaID: peer.replicaID, expiresMs: expiresMs))"
            manager.noteRefusal(id, reason: reason)
            effects += [.send(id, .goodbye(reason: reason)), .close(id, reason: reason)]
        }
        return effects
    }

    /// Ends the session of a revoked replica, saying why: its revocation
    /// first (so that it knows, and its status says so), then the goodbye.
    mutating func refuseRevoked(_ replicaID: String, on id: ConnectionID) -> [Effect] {
        guard let revocation = revoked[replicaID] else { return [] }
        let reason = "refused: \(IdentityError.revoked(replicaID: replicaID, revokedMs: revocation.revokedMs))"
        manager.noteRefusal(id, reason: reason)
        return [.send(id, .revocations([revocation])), .send(id, .goodbye(reason: reason)), .close(id, reason: reason)]
    }

    /// The batch without the events of revoked replicas' feeds written at or
    /// after the revocation's time (`time_ms`), which are counted and
    /// logged. Every replica applies the same rule, so they all keep the
    /// same events of a revoked feed: those written before it was revoked.
    ///
    /// A node that verifies leaves the cut to the ingest
    /// (`FeedKeys.validBeforeMs`): a signed run must be verified whole first.
    mutating func withoutRevoked(_ batch: EventBatch, on id: ConnectionID) -> EventBatch {
        guard !revoked.isEmpty, !verifiesFeeds else { return batch }
        var kept = batch
        kept.events = batch.events.filter { event in
            guard let revocation = revoked[event.feed.origin] else { return true }
            return event.timeMs < Int64(clamping: revocation.revokedMs)
        }
        let refused = batch.events.count - kept.events.count
        if refused > 0 {
            counters.eventsRejectedRevoked += refused
            emit(
                LogRecord(
                    .warning, .eventsRefused, "refused events of revoked replicas",
                    [
                        ("cause", "revoked"), ("conn", "\(id)"), ("peer", sessions[id]?.peer?.replicaID ?? "?"),
                        ("events", "\(refused)"),
                    ]))
        }
        return kept
    }
}
