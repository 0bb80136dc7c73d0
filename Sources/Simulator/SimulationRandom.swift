/// The simulator's one source of randomness: xoshiro256** seeded through
/// SplitMix64, so that one seed replays one run exactly, on any machine.
///
/// ```swift
/// var random = SimulationRandom(seed: 42)
/// if random.chance(0.05) { dropTheMessage() }
/// let delay = random.int(in: 1...20)
/// ```
public struct SimulationRandom: RandomNumberGenerator, Sendable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    public init(seed: UInt64) {
        var mixer = seed
        func splitMix() -> UInt64 {
            mixer &+= 0x9E37_79B9_7F4A_7C15
            var z = mixer
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitMix()
        s1 = splitMix()
        s2 = splitMix()
        s3 = splitMix()
    }

    public mutating func next() -> UInt64 {
        let result = rotateLeft(s1 &* 5, by: 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotateLeft(s3, by: 45)
        return result
    }

    /// True with probability `probability` (0 never, 1 always).
    public mutating func chance(_ probability: Double) -> Bool {
        guard probability > 0 else { return false }
        return Double(next() >> 11) * 0x1.0p-53 < probability
    }

    /// A uniform integer in `range`.
    public mutating func int<T: FixedWidthInteger>(in range: ClosedRange<T>) -> T {
        T.random(in: range, using: &self)
    }

    /// A uniform integer in `range`, which must not be empty.
    public mutating func int<T: FixedWidthInteger>(in range: Range<T>) -> T {
        T.random(in: range, using: &self)
    }

    /// A uniform double in `range`.
    public mutating func double(in range: ClosedRange<Double>) -> Double {
        Double.random(in: range, using: &self)
    }

    /// A uniform element of a non-empty collection.
    public mutating func element<C: RandomAccessCollection>(of collection: C) -> C.Element {
        precondition(!collection.isEmpty, "picking from an empty collection")
        let offset = Int.random(in: 0..<collection.count, using: &self)
        return collection[collection.index(collection.startIndex, offsetBy: offset)]
    }

    /// A seed for an independent stream (a node's peer manager, a sub-run),
    /// drawn from this one.
    public mutating func derivedSeed() -> UInt64 {
        next()
    }

    private func rotateLeft(_ value: UInt64, by amount: UInt64) -> UInt64 {
        (value << amount) | (value >> (64 - amount))
    }
}
