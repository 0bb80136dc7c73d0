import Dispatch
import SyncProtocol

/// Encoding and sealing, opening and decoding, for one established
/// connection, on a serial queue of its own: a 2 MiB catch-up batch is
/// sealed there, not on the event loop, so the other connections never
/// wait for it. Work leaves in the order it came, in each direction.
///
/// A small message (a live event, an acknowledgement, a cursor) is sealed
/// or opened on the caller's thread instead (`sealNow`, `openNow`) when no
/// work of the connection waits on the queue: a live event then costs no
/// thread hop on either side.
///
/// `@unchecked Sendable`: `encoder` and `decoder` (per-connection feed
/// declarations) are used on `queue`, or by the `…Now` calls while nothing
/// is on the queue (the caller counts what it handed over and has not had
/// back; `queue`'s work ends with its `done`, so once every `done` arrived
/// the queue no longer touches them). The sealer and opener are `Sendable`
/// themselves.
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
        encoder = MessageEncoder(compression: compression, pruning: pruning, domainVersions: true)
        decoder = MessageDecoder(compression: compression, domainVersions: true)
        queue = DispatchQueue(label: "peersync.connection.\(id)")
        sealer = keys.sealer
        opener = keys.opener
        self.catchUp = catchUp
    }

    /// A batch of at least this many events is a catch-up's.
    static let catchUpBatchEvents = 1_000

    /// Batches of at most this many events, and frames of at most
    /// `inlineFrameBytes`, may be sealed and opened on the caller's thread.
    static let inlineBatchEvents = 64
    static let inlineFrameBytes = 16 << 10

    /// Whether `message` is small enough for `sealNow`.
    static func sealsInline(_ message: Message) -> Bool {
        if case .events(let batch) = message { return batch.events.count <= inlineBatchEvents }
        return true
    }

    /// Whether `frame` is small enough for `openNow`.
    static func opensInline(_ frame: Frame) -> Bool { frame.body.count <= inlineFrameBytes }

    /// `seal` on the caller's thread; only while no `seal` or `open` of this
    /// codec has yet to call its `done`.
    func sealNow(_ message: Message) -> Result<[UInt8], any Error> {
        encodeAndSeal(message)
    }

    /// `open` on the caller's thread; only while no `seal` or `open` of this
    /// codec has yet to call its `done`.
    func openNow(_ frame: Frame) -> Result<Message, any Error> {
        Result { try decoder.decode(try opener.open(frame)) }
    }

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

    /// Codec queue, or `sealNow`.
    private func encodeAndSeal(_ message: Message) -> Result<[UInt8], any Error> {
        encoder.peerAcceptsCompression = decoder.peerOffersCompression
        encoder.peerAcceptsPruning = decoder.peerOffersPruning
        encoder.peerAcceptsDomainVersions = decoder.peerOffersDomainVersions
        guard encoder.carries(message) else { return .success([]) }
        let plaintext = encoder.encode(message)
        guard plaintext.count <= FrameSealer.maximumPlaintextSize else {
            return .failure(WireError.frameTooLarge(plaintext.count, limit: FrameSealer.maximumPlaintextSize))
        }
        return .success(sealer.seal(plaintext).encoded())
    }

    /// The message a sealed frame holds, to `done` on the codec's queue.
    func open(_ frame: Frame, done: @escaping @Sendable (Result<Message, any Error>) -> Void) {
        queue.async { [self] in done(openNow(frame)) }
    }

    /// Runs `body` after every seal and open handed over before it.
    func afterPending(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }
}
