import Foundation
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
}
