/// Why a relay cannot use its shared store; each case says what to do.
public enum SharedStoreError: Error, CustomStringConvertible, Sendable {
    /// PostgreSQL cannot be reached or failed the call: writes are refused
    /// (nothing is stored or acknowledged) until it is back.
    case unavailable(String)
    /// The database was migrated by a newer peerd.
    case newerSchema(found: Int, supported: Int)
    /// The store belongs to another cluster.
    case foreignCluster(store: String, cluster: String, ours: String)
    /// The relay's log mirrors another store, or holds events this one lacks.
    case notMirrorable(String)

    public var description: String {
        switch self {
        case .unavailable(let reason):
            return "the shared store is unavailable (\(reason)); writes are refused until it is back"
        case .newerSchema(let found, let supported):
            return "the shared store has schema version \(found), newer than this peerd supports (\(supported)); "
                + "upgrade peerd"
        case .foreignCluster(let store, let cluster, let ours):
            return "the shared store \(store) belongs to cluster \(cluster), not to this relay's cluster \(ours); "
                + "give each cluster its own database"
        case .notMirrorable(let reason):
            return reason
        }
    }
}
