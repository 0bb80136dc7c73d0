/// The workload's mix of writes (docs/lab.md, "Workload"): plain edits,
/// and the writes that make the replicas disagree until the fold decides:
/// one item edited on several nodes at the same moment, an edit on one
/// node against a delete on another, undos, and single-writer sessions
/// (claims, takeovers, releases, two claims of one free item at once).
/// A pure value: the same random numbers give the same writes.
///
/// ```swift
/// var mix = WriteMix(peers: 5)
/// var random = SplitMix64(seed: 7)
/// let writes = mix.workload(&random, durationMs: 60_000, rate: 25)
/// ```
public struct WriteMix: Sendable {
    public typealias Write = LabPlan.Write

    /// At most this many items held by a planned claim at once: the others' writes to a held item are refused.
    public static let maximumHeld = 3

    public let peers: Int
    /// Items created so far (slots `0..<created`).
    public private(set) var created = 0
    /// The planned holder of each held slot (the node that claimed or took it over last).
    public private(set) var held: [Int: Int] = [:]
    private var written: [Write] = []

    public init(peers: Int) { self.peers = peers }

    /// Writes from 500 ms until 500 ms before `durationMs`, about `rate` a second across all nodes: after
    /// each draw of one or more writes the next comes `n` × 1000 / `rate` ms later on average (half to one
    /// and a half of it).
    public mutating func workload<R: RandomNumberGenerator>(_ random: inout R, durationMs: Int64, rate: Int)
        -> [Write]
    {
        let gapMs = 1_000 / Double(max(rate, 1))
        var at: Int64 = 500
        var elapsed = 500.0
        while at < durationMs - 500 {
            let drawn = next(&random, atMs: at)
            elapsed += gapMs * Double(drawn.count) * Double.random(in: 0.5...1.5, using: &random)
            at = max(at + 1, Int64(elapsed))
        }
        return written
    }

    /// The writes of one draw, all at `atMs`: one write, or two or three for a conflict made on purpose.
    public mutating func next<R: RandomNumberGenerator>(_ random: inout R, atMs: Int64) -> [Write] {
        let drawn = draw(&random, atMs: atMs)
        written += drawn
        return drawn
    }

    private mutating func draw<R: RandomNumberGenerator>(_ random: inout R, atMs: Int64) -> [Write] {
        let node = Int.random(in: 0..<peers, using: &random)
        let other = (node + Int.random(in: 1..<max(peers, 2), using: &random)) % peers
        let roll = Int.random(in: 0..<100, using: &random)
        let slot = created == 0 ? 0 : Int.random(in: 0..<created, using: &random)
        let value = Int64.random(in: 0...999, using: &random)
        func write(_ kind: Write.Kind, on node: Int, _ slot: Int, _ value: Int64 = 0) -> Write {
            Write(atMs: atMs, node: node, kind: kind, slot: slot, value: value)
        }
        func edit(on node: Int) -> Write {
            let kinds: [Write.Kind] = [.rename, .quantity, .note]
            return write(kinds[Int.random(in: 0..<3, using: &random)], on: node, slot, value)
        }
        let free = (0..<created).filter { held[$0] == nil }
        switch roll {
        case _ where created < 3 || roll < 10:
            created += 1
            return [write(.create, on: node, created - 1, value)]
        case 10..<23: return [write(.rename, on: node, slot, value)]
        case 23..<37: return [write(.quantity, on: node, slot, value)]
        case 37..<43: return [write(.note, on: node, slot, value)]
        case 43..<45: return [write(.delete, on: node, slot)]
        case 45..<52: return [write(.undo, on: node, slot)]
        case 52..<58:
            // The same request again, to the node it went to, with the same Idempotency-Key.
            let candidates = written.indices.filter { written[$0].kind.isRetryable }
            guard let picked = candidates.randomElement(using: &random) else { return [edit(on: node)] }
            let original = written[picked]
            return [write(.retry, on: original.node, original.slot, Int64(picked))]
        case 58..<73:
            // One item edited on two or three nodes at the same moment.
            var nodes = Array(0..<peers)
            nodes.shuffle(using: &random)
            return nodes.prefix(min(peers, Int.random(in: 2...3, using: &random))).map { edit(on: $0) }
        case 73..<77:
            // A delete on one node, an edit of the same item on another, at the same moment.
            return [write(.delete, on: node, slot), edit(on: other)]
        case 77..<82:
            // An undo on one node against an edit on another.
            return [write(.undo, on: node, slot), edit(on: other)]
        case 82..<88:
            guard held.count < Self.maximumHeld, let item = free.randomElement(using: &random) else {
                return [edit(on: node)]
            }
            held[item] = node
            return [write(.claim, on: node, item)]
        case 88..<92:
            // Another node takes a held item over.
            guard let (item, holder) = held.sorted(by: { $0.key < $1.key }).randomElement(using: &random) else {
                return [edit(on: node)]
            }
            let taker = holder == node ? other : node
            held[item] = taker
            return [write(.takeover, on: taker, item)]
        case 92..<97:
            guard let (item, holder) = held.sorted(by: { $0.key < $1.key }).randomElement(using: &random) else {
                return [edit(on: node)]
            }
            held[item] = nil
            return [write(.release, on: holder, item)]
        default:
            // Two nodes claim one free item at the same moment: the canonical order (or a relay) decides.
            guard held.count < Self.maximumHeld, let item = free.randomElement(using: &random) else {
                return [edit(on: node)]
            }
            held[item] = node
            return [write(.claim, on: node, item), write(.claim, on: other, item)]
        }
    }
}
