import Replica
import TestSupport

/// How sync could deliver feeds: interleaved at random, each feed in seq
/// order, in batches shuffled within, sometimes with an event offered again.
enum RandomDelivery {
    /// `feeds` cut into batches whose sizes `size` draws; about one batch in
    /// `repeatOneIn` also repeats an event delivered before.
    static func batches(
        of feeds: [[Event]], using rng: inout SplitMix64, repeatOneIn: Int,
        size: (inout SplitMix64) -> Int
    ) -> [[Event]] {
        var next = Array(repeating: 0, count: feeds.count)
        var delivered: [Event] = []
        var batches: [[Event]] = []
        while feeds.indices.contains(where: { next[$0] < feeds[$0].count }) {
            let count = size(&rng)
            var batch: [Event] = []
            while batch.count < count {
                let open = feeds.indices.filter { next[$0] < feeds[$0].count }
                guard let feed = open.randomElement(using: &rng) else { break }
                batch.append(feeds[feed][next[feed]])
                next[feed] += 1
            }
            if !delivered.isEmpty && Int.random(in: 0..<repeatOneIn, using: &rng) == 0 {
                batch.append(delivered.randomElement(using: &rng)!)
            }
            delivered += batch
            batch.shuffle(using: &rng)
            batches.append(batch)
        }
        return batches
    }
}
