import Dispatch
import SyncProtocol

/// Encoding and sealing, opening and decoding, for one established
/// connection, on a serial queue of its own: a 2 MiB catch-up batch is
/// sealed there, not on the event loop, so the other connections never
/// wait for it. Work leaves in the order it came, in each direction.
///
/// `@unchecked Sendable`: `encoder` and `decoder` (per-connection feed
/// declarations) are used on `queue` only; the sealer and opener are
/// `Sendable` themselves.
final class ConnectionCodec: @unchecked Sendable {
    private let queue: DispatchQueue
    private let sealer: FrameSealer
    private let opener: FrameOpener
    private var encoder: MessageEncoder
    private var decoder: MessageDecoder

    /// Seals large batches (a catch-up) at a lower CPU priority.
    private let catchUp: CatchUpWorker

    /// - Parameter compression: whether this side offers compressed batches;
    ///   they flow only once the peer has declared that it offers them too.
    /// - Parameter pruning: whether this side offers link pruning; `prune`
    ///   and `graft` go out only once the peer has declared it too.
    init(id: ConnectionID, keys: SessionKeys, catchUp: CatchUpWorker, compression: Bool, pruning: Bool = false) {
        encoder = MessageEncoder(compression: compression, pruning: pruning)
        decoder = MessageDecoder(compression: compression)
        queue = DispatchQueue(label: "peersync.connection.\(id)")
        sealer = keys.sealer
        opener = keys.opener
        self.catchUp = catchUp
    }

    /// A batch of at least this many events is a catch-up's.
    static let catchUpBatchEvents = 1_000

    /// The message as the bytes of one sealed frame, to `done` on the codec's
    /// queue; no bytes for a message this peer cannot decode (a `prune` to a
    /// peer that did not declare pruning), which is dropped.
    func seal(_ message: Message, done: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        queue.async { [self] in
            if case .events(let batch) = message, batch.events.count >= Self.catchUpBatchEvents {
                // Still in this connection's order: the queue waits for it.
                done(catchUp.run { [self] in encodeAndSeal(message) })
            } else {
                done(encodeAndSeal(message))
            }
        }
    }

    /// Codec queue only.
    private func encodeAndSeal(_ message: Message) -> Result<[UInt8], any Error> {
        encoder.peerAcceptsCompression = decoder.peerOffersCompression
        encoder.peerAcceptsPruning = decoder.peerOffersPruning
        guard encoder.carries(message) else { return .success([]) }
        let plaintext = encoder.encode(message)
        guard plaintext.count <= FrameSealer.maximumPlaintextSize else {
            return .failure(WireError.frameTooLarge(plaintext.count, limit: FrameSealer.maximumPlaintextSize))
        }
        return .success(sealer.seal(plaintext).encoded())
    }

    /// The message a sealed frame holds, to `done` on the codec's queue.
    func open(_ frame: Frame, done: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        queue.async { [self] in
            done(Result { try decoder.decode(try opener.open(frame)) })
        }
    }

    /// Runs `body` after every seal and open handed over before it.
    func afterPending(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }
}
