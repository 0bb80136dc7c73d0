/// Seconds measured several times: the median and the range, as the lab report prints them.
struct Spread {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    /// The middle value (the upper one of an even count); nil without values.
    var median: Double? { sorted.isEmpty ? nil : sorted[sorted.count / 2] }

    /// `0.07 s (0.07–0.08)`, `—` without values.
    var text: String {
        guard let median, let low = sorted.first, let high = sorted.last else { return "—" }
        let digits = high < 10 ? 2 : 1
        return
            "\(Figure.fixed(median, digits)) s (\(Figure.fixed(low, digits))–\(Figure.fixed(high, digits)))"
    }
}
