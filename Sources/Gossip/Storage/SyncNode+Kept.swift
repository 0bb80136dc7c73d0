import Replica
import SyncProtocol

extension SyncNode {
    /// What a log keeps for its node across restarts: the certificates it
    /// learned, the fork proofs of its quarantined feeds, and its checkpoint
    /// chain with the acknowledgements. A node starts with them
    /// (`GossipService`, the simulator).
    public struct Kept: Sendable {
        public var certificates: [Certificate]
        public var forkProofs: [ForkProof]
        public var checkpoint: (statement: SignedCheckpoint, takenMs: Milliseconds, floor: CheckpointContent?)?
        public var earlierCheckpoints: [SignedCheckpoint] = []
        public var checkpointAcks: [CheckpointAck]

        public init(log: EventLog) throws {
            // A certificate that no longer reads (a format this build does not know) is left out.
            certificates = try log.certificates().compactMap { try? Certificate(bytes: $0) }
            forkProofs = try log.forkProofs()
            checkpointAcks = try log.checkpointAcks().compactMap { try? CheckpointAck(bytes: $0) }
            // A statement that does not read as a signed one (a test's, say) is not shown to peers.
            guard let held = try log.checkpoint(), let statement = try? SignedCheckpoint(bytes: held.statement) else {
                return
            }
            checkpoint = (statement, held.takenMs, held.floor)
            earlierCheckpoints = try log.checkpointStatements().compactMap { try? SignedCheckpoint(bytes: $0) }
                .filter { $0.content.id != held.content.id }
        }

        /// Puts what the log kept into a node's configuration.
        public func configure(_ configuration: inout SyncNode.Configuration) {
            configuration.certificates += certificates
            configuration.forkProofs += forkProofs
            configuration.checkpoint = checkpoint
            configuration.earlierCheckpoints = earlierCheckpoints
            configuration.checkpointAcks = checkpointAcks
        }
    }
}
