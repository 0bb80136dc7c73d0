import Foundation
import Replica
import TestSupport
import Testing

/// Replicas as named data directories inside a test's temporary directory.
extension TemporaryDirectory {
    /// Runs peerd on the data directory `dir` and requires success; returns stdout, trimmed.
    @discardableResult
    func peerdOK(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> String
    {
        let result = try Executables.peerd(arguments, data: url(dir))
        try #require(result.status == 0, "peerd \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Initialises `first` with a new cluster key and joins `others` to that cluster.
    func cluster(_ first: String, _ others: [String]) throws {
        try peerdOK(["init"], first)
        let code = try peerdOK(["cluster-code"], first)
        for name in others { try peerdOK(["init", "--join", code], name) }
    }

    /// The replica id of the replica in `dir` (`peerd status --json`).
    func replicaID(_ dir: String) throws -> String { try ReplicaStatus.of(url(dir)).replica_id }

    /// How many events of `origin`'s default feed the replica in `dir` holds (read from its file).
    func heldEvents(of origin: String, in dir: String) throws -> Int {
        try Peek.log(url(dir)).events(in: FeedID(replicaID: origin), seqs: 1...1_000, limit: 1_000).count
    }
}
