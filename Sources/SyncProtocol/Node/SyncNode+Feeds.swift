import Replica

/// Signed feeds while sessions run (docs/protocol.md "Signed feeds"): the
/// identity keys that may sign each origin's feeds, learned from
/// certificates, and the fork proofs that quarantine a feed everywhere.
extension SyncNode {
    /// Whether this node signs its feeds and verifies every event it takes:
    /// it does when it has an identity key (every `peerd`).
    public var verifiesFeeds: Bool { configuration.identity != nil }

    /// The keys every received event is verified with, each revoked
    /// origin's valid for what it wrote before; `nil` when this node does not verify.
    var verificationKeys: FeedKeys? {
        guard verifiesFeeds else { return nil }
        var keys = feedKeys
        for (origin, revocation) in revoked { keys.validBeforeMs[origin] = Int64(clamping: revocation.revokedMs) }
        return keys
    }

    /// The certificates this node knows, its own first, then by replica id.
    public var knownCertificates: [Certificate] {
        let own = ownCertificate.map { [$0] } ?? []
        return own
            + certificates.keys.sorted().flatMap { id in certificates[id]!.filter { $0 != ownCertificate } }
    }

    /// The fork proofs this node holds, in feed order.
    public var forkProofList: [ForkProof] { forkProofs.keys.sorted().map { forkProofs[$0]! } }

    /// The certificate that vouches for this node's key: the admin's, or in
    /// an open cluster one it signs itself, for every scope.
    static func ownCertificate(_ configuration: Configuration) -> Certificate? {
        guard let identity = configuration.identity else { return nil }
        return identity.certificate
            ?? Certificate.selfSigned(by: identity.key, replicaID: configuration.hello.replicaID)
    }

    /// Keeps a certificate that this cluster's trust accepts (one signed by
    /// the admin key; in an open cluster one its replica signed itself) and
    /// learns its key; true when it is new.
    mutating func keep(_ certificate: Certificate) -> Bool {
        let admin = configuration.session.trust.adminKey
        guard certificate.adminKey == (admin ?? certificate.publicKey) else { return false }
        guard !(certificates[certificate.replicaID]?.contains(certificate) ?? false) else { return false }
        certificates[certificate.replicaID, default: []].append(certificate)
        feedKeys.add(certificate.publicKey, for: certificate.replicaID)
        return true
    }

    /// Certificates a peer sent (`from`), or a peer's own from its hello:
    /// each new one is kept, stored and passed on to every other peer.
    /// Runs the sending peer declined go to it again: it may have learned
    /// the key it lacked (docs/protocol.md "Runs a peer declined").
    mutating func learn(_ learned: [Certificate], from source: ConnectionID, now: Milliseconds) -> [Effect] {
        var effects = perform(sessions[source]?.certificatesExchanged() ?? [], on: source, now: now)
        let fresh = learned.filter { keep($0) }
        guard !fresh.isEmpty else { return effects }
        effects.append(.keepCertificates(fresh))
        return effects + passOn(fresh, except: source, now: now)
    }

    /// Certificates another process stored in the log (a `peerd import`
    /// while the daemon runs): each one this node did not hold is kept
    /// and passed on to every peer, exactly as if a peer had sent it, so
    /// that the events it verifies travel on with their proofs.
    public mutating func learnStored(_ stored: [Certificate], now: Milliseconds) -> [Effect] {
        let fresh = stored.filter { keep($0) }
        guard !fresh.isEmpty else { return [] }
        emit(
            LogRecord(
                .info, .certificatesLearned, "certificates learned from the log",
                [("replicas", fresh.map(\.replicaID).joined(separator: ","))]))
        return passOn(fresh, except: nil, now: now)
    }

    /// Sends fresh certificates to every identified session but `excluded`,
    /// and sends again there what each peer declined for want of a key.
    private mutating func passOn(_ fresh: [Certificate], except excluded: ConnectionID?, now: Milliseconds)
        -> [Effect]
    {
        var effects: [Effect] = []
        for id in sessions.keys.sorted() where id != excluded && sessions[id]?.peer != nil {
            effects.append(.send(id, .certificates(fresh)))
            effects += perform(sessions[id]!.certificatesExchanged(), on: id, now: now)
        }
        return effects
    }

    /// What a newly identified peer hears first: the certificates and fork proofs this node holds.
    mutating func greet(_ id: ConnectionID, hello: Hello, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        if let certificate = sessions[id]?.peerIdentity?.certificate {
            effects += learn([certificate], from: id, now: now)
        } else if let key = sessions[id]?.peerIdentity?.publicKey, configuration.session.trust.adminKey == nil {
            feedKeys.add(key, for: hello.replicaID)
        }
        if verifiesFeeds { effects.append(.send(id, .certificates(knownCertificates))) }
        let proofs = forkProofList.filter { sessions[id]?.mayRead($0.feed) ?? false }
        if !proofs.isEmpty { effects.append(.send(id, .forkProofs(proofs))) }
        return effects
    }

    /// Fork proofs found by an ingest (`from: nil`, already quarantined in
    /// the log) or sent by the peer on `from` (quarantined by the shell on
    /// `.quarantine`): each new one that the origin's key proves takes the
    /// feed out of what every session offers, is logged, and goes to every
    /// other peer that may read the feed.
    mutating func learn(
        _ proofs: [ForkProof], from source: ConnectionID?, foundHere: Bool, now: Milliseconds
    ) -> [Effect] {
        var fresh: [ForkProof] = []
        for proof in proofs where forkProofs[proof.feed] == nil {
            guard foundHere || proof.proves(keys: feedKeys.keys(for: proof.feed)) else {
                emit(
                    LogRecord(
                        .warning, .forkProofIgnored, "ignored a fork proof that does not hold",
                        [
                            ("feed", proof.feed.description),
                            ("peer", source.flatMap { sessions[$0]?.peer?.replicaID } ?? "?"),
                        ]))
                continue
            }
            forkProofs[proof.feed] = proof
            fresh.append(proof)
            emit(
                LogRecord(
                    .warning, .feedQuarantined, "fork: feed quarantined",
                    [
                        ("feed", proof.feed.description), ("seq", "\(proof.held.seq)"),
                        ("detail", "its origin signed two histories; no more of it is taken or served"),
                    ]))
        }
        guard !fresh.isEmpty else { return [] }
        var effects: [Effect] = foundHere ? [] : [.quarantine(fresh, keys: feedKeys)]
        for proof in fresh { cursor[proof.feed] = 0 }
        for id in sessions.keys.sorted() where sessions[id]?.peer != nil {
            let shown = fresh.filter { sessions[id]!.mayRead($0.feed) && (id != source || foundHere) }
            if !shown.isEmpty { effects.append(.send(id, .forkProofs(shown))) }
        }
        return effects + broadcastCursor(except: nil, now: now)
    }

    /// The batch without the feeds whose origin's certificates (in a
    /// cluster with an admin key) may not write their scope, which are
    /// counted and logged. A forwarder cannot have changed an event's
    /// scope: the origin's signature covers it.
    mutating func withoutUnwritable(_ batch: EventBatch, on id: ConnectionID) -> EventBatch {
        guard configuration.session.trust.adminKey != nil, !batch.events.isEmpty else { return batch }
        var refused: [FeedID: Int] = [:]
        var kept = batch
        kept.events = batch.events.filter { event in
            guard let held = certificates[event.feed.origin], !held.contains(where: { $0.mayWrite(event.feed.scope) })
            else { return true }
            refused[event.feed, default: 0] += 1
            return false
        }
        guard !refused.isEmpty else { return batch }
        kept.proofs = batch.proofs.filter { refused[$0.key] == nil }
        counters.eventsRejectedScope += refused.values.reduce(0, +)
        let feeds = refused.keys.sorted().map { "\($0.replicaID)/\($0.scope)=\(refused[$0]!)" }.joined(separator: ",")
        emit(
            LogRecord(
                .warning, .eventsRefused, "refused events outside their origin's write scopes",
                [
                    ("cause", "origin_scope"), ("conn", "\(id)"), ("peer", sessions[id]?.peer?.replicaID ?? "?"),
                    ("feeds", feeds),
                ]))
        return kept
    }

    /// Counts, logs and keeps (`refusedFeeds`) the runs an ingest refused
    /// for failing verification.
    mutating func noteRefusedRuns(_ report: IngestReport, from peer: String, now: Milliseconds) {
        for run in report.refused {
            counters.eventsRejectedSignature += run.count
            refusals.note(run, from: peer, now: now)
            emit(
                LogRecord(
                    .warning, .eventsRefused, "refused unverifiable events",
                    [
                        ("cause", "unverifiable"), ("peer", peer), ("detail", run.description),
                        ("fix", run.reason.remedy),
                    ]))
        }
        counters.eventsRejectedForked += report.refusedForked.values.reduce(0, +)
        counters.eventsRejectedRevoked += report.refusedRevoked
    }
}
