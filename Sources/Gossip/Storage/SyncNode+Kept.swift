import Replica
import SyncProtocol

extension SyncNode {
    /// What a log keeps for its node across restarts: the certificates it
    /// learned and the fork proofs of its quarantined feeds. A node starts
    /// with them (`GossipService`, the simulator).
    public struct Kept: Sendable {
        public var certificates: [Certificate]
        public var forkProofs: [ForkProof]

        public init(log: EventLog) throws {
            // A certificate that no longer reads (a format this build does not know) is left out.
            certificates = try log.certificates().compactMap { try? Certificate(bytes: $0) }
            forkProofs = try log.forkProofs()
        }
    }
}
