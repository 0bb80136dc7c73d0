/// The certificates a log keeps beside its feeds (`certificates`,
/// docs/identity.md): which origins its feeds need keys of, and removing the
/// ones a replica no longer needs (`CertificateRetention` in Gossip decides).
extension EventLog {
    /// The origins of the feeds this log holds: the replicas whose keys
    /// sign them (a thin client's feed `tablet@relay` is the relay's).
    ///
    /// ```swift
    /// let needed = try log.feedOrigins()   // ["3f0c…", "relay-1", …]
    /// ```
    public func feedOrigins() throws -> Set<String> {
        try read {
            let statement = try db.statement("SELECT DISTINCT replica_id FROM feeds")
            var origins: Set<String> = []
            while try statement.step() { origins.insert(FeedID(replicaID: statement.text(0)).origin) }
            return origins
        }
    }

    /// Removes the kept certificates with these bytes, in one transaction;
    /// returns how many there were.
    @discardableResult
    public func removeCertificates(_ certificates: [[UInt8]]) throws -> Int {
        guard !certificates.isEmpty else { return 0 }
        return try write {
            var removed = 0
            for bytes in certificates {
                try db.statement("DELETE FROM certificates WHERE bytes = ?").run([.blob(bytes)])
                removed += db.changes
            }
            return removed
        }
    }
}
