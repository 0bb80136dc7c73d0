import CSodium
import Foundation

/// The hash chain that links each event of a feed to all before it, and the
/// message an origin signs for a feed's head (docs/protocol.md "Signed feeds").
///
/// `link(0)` is 32 zero bytes; `link(n) = BLAKE2b-256("peersync/1 event" ‖
/// link(n-1) ‖ encoding(event n))`. One Ed25519 signature over a head
/// (feed, seq, link) vouches for every event up to that seq.
///
/// ```swift
/// var link = FeedChain.genesis
/// for event in events { link = FeedChain.link(after: link, event) }
/// let message = FeedChain.headMessage(feed: feed, seq: events.last!.seq, link: link)
/// ```
public enum FeedChain {
    /// Bytes in a link.
    public static let linkSize = 32
    /// Bytes in a head signature (Ed25519).
    public static let signatureSize = 64
    /// The link before a feed's first event.
    public static let genesis = [UInt8](repeating: 0, count: linkSize)
    static let linkContext = Array("peersync/1 event".utf8)
    static let headContext = Array("peersync/1 feed head".utf8)

    private static let sodiumIsReady: Bool = sodium_init() >= 0

    /// The link of `event` following the link `previous`. Hashes the
    /// encoding piece by piece from the event's own storage, with the
    /// hash state on the stack: no allocation per event.
    public static func link(after previous: [UInt8], _ event: Event) -> [UInt8] {
        precondition(sodiumIsReady, "libsodium failed to initialise (sodium_init)")
        // The state is 64-byte aligned, which Swift cannot declare: it lives in raw stack memory.
        return withUnsafeTemporaryAllocation(byteCount: crypto_generichash_statebytes(), alignment: 64) { memory in
            let state = OpaquePointer(memory.baseAddress!)
            crypto_generichash_init(state, nil, 0, linkSize)
            func update(_ buffer: UnsafeRawBufferPointer) {
                guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
                crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(buffer.count))
            }
            linkContext.withUnsafeBytes { update($0) }
            previous.withUnsafeBytes { update($0) }
            forEachPiece(ofEncoding: event, update)
            var link = [UInt8](repeating: 0, count: linkSize)
            link.withUnsafeMutableBufferPointer { _ = crypto_generichash_final(state, $0.baseAddress!, linkSize) }
            return link
        }
    }

    /// The link after `events`, which follow the link `base` in seq order.
    public static func link(after base: [UInt8], _ events: some Sequence<Event>) -> [UInt8] {
        events.reduce(base) { link(after: $0, $1) }
    }

    /// An event's canonical encoding, as `link` hashes it: event id (16
    /// bytes), replica id, scope, seq (u64 big-endian), time (i64
    /// big-endian), entity type, entity id, payload; each text as a u32
    /// big-endian byte count and its UTF-8 bytes.
    public static func encoding(of event: Event) -> [UInt8] {
        var bytes: [UInt8] = []
        forEachPiece(ofEncoding: event) { bytes += $0 }
        return bytes
    }

    /// The encoding's bytes in order, in pieces read in place: the one
    /// definition of the layout, which `link` hashes and `encoding` collects.
    private static func forEachPiece(ofEncoding event: Event, _ body: (UnsafeRawBufferPointer) -> Void) {
        // Not generic: a nested generic function looks its metadata up on every call.
        func integer(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian, body) }
        func text(_ text: String) {
            var text = text
            withUnsafeBytes(of: UInt32(text.utf8.count).bigEndian, body)
            text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        withUnsafeBytes(of: event.eventID.uuid, body)
        text(event.feed.replicaID)
        text(event.feed.scope)
        integer(event.seq)
        integer(UInt64(bitPattern: event.timeMs))
        text(event.entityType)
        text(event.entityID)
        text(event.payload)
    }

    /// What the origin signs for a head: "peersync/1 feed head" ‖ replica id
    /// ‖ scope (each a u32 big-endian byte count and the bytes) ‖ seq (u64
    /// big-endian) ‖ link.
    public static func headMessage(feed: FeedID, seq: UInt64, link: [UInt8]) -> [UInt8] {
        var bytes = headContext
        ByteLayout.append(text: feed.replicaID, to: &bytes)
        ByteLayout.append(text: feed.scope, to: &bytes)
        ByteLayout.append(bigEndian: seq, to: &bytes)
        bytes += link
        return bytes
    }

    /// Whether `signature` is the Ed25519 signature of `message` by `publicKey`.
    public static func verify(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        precondition(sodiumIsReady, "libsodium failed to initialise (sodium_init)")
        guard signature.count == signatureSize, publicKey.count == Int(crypto_sign_PUBLICKEYBYTES) else {
            return false
        }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
