/// Why a checkpoint was not taken.
public enum CheckpointError: Error, Equatable, CustomStringConvertible {
    /// Its bytes do not follow the layout of docs/protocol.md "Checkpoints".
    case malformed(String)
    /// It was recomputed from the events it covers, and differs.
    case mismatch(checkpoint: String, madeBy: String, detail: String)
    /// Its signature is not its signer's over its bytes.
    case badSignature(madeBy: String)
    /// This log cannot take it: it lacks events it covers, or it does not
    /// extend the checkpoint this log holds.
    case notApplicable(String)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed checkpoint: \(why)"
        case .mismatch(let checkpoint, let madeBy, let detail):
            return
                "checkpoint \(checkpoint.prefix(16)) made by \(madeBy) does not match the events it covers: \(detail)"
        case .badSignature(let madeBy): return "checkpoint made by \(madeBy): its signature does not verify"
        case .notApplicable(let why): return "checkpoint not taken: \(why)"
        }
    }
}
