import Foundation
import Replica
import SyncProtocol

/// A checkpoint this replica refused, as `GET /status` (`refused_checkpoints`)
/// shows it (docs/http-api.md).
struct RefusedCheckpointReport: Codable, Equatable {
    /// The checkpoint's id (64 hex digits).
    var id: String
    var made_by: String
    /// `admin` or `maker`, and the key that signed it (64 hex digits).
    var signer: String
    var signer_key: String
    /// `mismatch` (this log's events fold to another state), `untrusted`
    /// (a signer this cluster does not trust) or `other_chain`.
    var cause: String
    var detail: String
    /// The replica it came from; empty when this replica's operator gave it.
    var peer: String

    init(_ refused: RefusedCheckpoint) {
        id = refused.id
        made_by = refused.madeBy
        signer = refused.signer
        signer_key = refused.signerKey
        cause = refused.cause.rawValue
        detail = refused.detail
        peer = refused.peer
    }

    /// `peerd status`'s line.
    var text: String {
        "checkpoint  refused \(id.prefix(16))… made by \(made_by), signed by the \(signer) key \(signer_key.prefix(16))…: "
            + "\(cause), \(detail)"
    }
}

/// Where dropping history stands, as `GET /status` (`history`) shows it
/// (docs/operations.md "Dropping history").
struct HistoryReport: Codable, Equatable {
    struct Blocker: Codable, Equatable {
        var replica_id: String
        /// Since when its acknowledgement is awaited (Unix ms), and for how long.
        var since_ms: Int64
        var blocked_ms: Int64
    }

    /// `all`, or `Nd`: `peerd run --keep-history`.
    var retention: String
    /// `off` (no checkpoint, or `--keep-history all`), `blocked` (members
    /// have not acknowledged it), `retained` (all have; the retention period
    /// has not passed) or `dropped` (this replica no longer holds the events
    /// it covers).
    var stage: String
    /// The checkpoint it is about; omitted without one.
    var checkpoint: String?
    /// The members whose acknowledgement is missing.
    var blockers: [Blocker]
    /// The members that acknowledged it.
    var acknowledged: [String]

    init(_ collection: HistoryCollection, nowMs: Int64) {
        retention = collection.retention.description
        stage = collection.stage.rawValue
        checkpoint = collection.checkpoint
        blockers = collection.blockers.map {
            Blocker(replica_id: $0.replica, since_ms: $0.sinceMs, blocked_ms: max(0, nowMs - $0.sinceMs))
        }
        acknowledged = collection.acknowledged
    }

    /// `peerd status`'s lines.
    var lines: [String] {
        guard let checkpoint else { return [] }
        var lines = ["history     \(stage) (keep \(retention)) under checkpoint \(checkpoint.prefix(16))…"]
        for blocker in blockers {
            lines.append(
                "history     waits for \(blocker.replica_id)'s acknowledgement for \(blocker.blocked_ms / 1000) s")
        }
        return lines
    }
}
