/// Where things go on the timeline: x is time from the start to the end
/// of the run, one lane per node top to bottom. Lanes are shorter the
/// more nodes there are (64 px for 5, 26 for 20, never under 18), and a
/// long run gets a wider plot (scrolled in the page) so that seconds stay
/// apart.
struct TimelineLayout {
    /// Left of the plot: the lanes' labels.
    static let labelWidth = 128.0
    static let rightMargin = 24.0
    /// Above the lanes: the markers' labels.
    static let top = 34.0
    /// Below the lanes: the time axis.
    static let axisHeight = 30.0

    let span: Int64
    let laneCount: Int
    let laneHeight: Double
    let plotWidth: Double

    init(spanMs: Int64, lanes: Int) {
        span = max(spanMs, 1)
        laneCount = max(lanes, 1)
        laneHeight = min(64, max(18, (520 / Double(laneCount)).rounded(.down)))
        // 1,080 px up to 3 minutes, then 6 px a second, at most 4,800.
        plotWidth = min(4800, max(1080, Double(span) / 1000 * 6))
    }

    var width: Double { Self.labelWidth + plotWidth + Self.rightMargin }
    var lanesBottom: Double { Self.top + laneHeight * Double(laneCount) }
    var height: Double { lanesBottom + Self.axisHeight }

    /// The x of a moment, clamped to the run.
    func x(_ ms: Int64) -> Double {
        Self.labelWidth + plotWidth * Double(min(max(ms, 0), span)) / Double(span)
    }

    /// The top of lane `index`.
    func laneTop(_ index: Int) -> Double { Self.top + laneHeight * Double(index) }

    /// The y of `events` held in lane `index`, out of `maxEvents` (the most any node held).
    func y(events: Int64, of maxEvents: Int64, lane index: Int) -> Double {
        let inset = 4.0
        let bottom = laneTop(index) + laneHeight - inset
        let room = laneHeight - 2 * inset
        return bottom - room * Double(max(events, 0)) / Double(max(maxEvents, 1))
    }

    /// The moments of the time axis's ticks: a round step (1 s … 1 h) that leaves about 90 px between them.
    var ticks: [Int64] {
        let steps: [Int64] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].map { $0 * 1000 }
        let most = max(1, Int64(plotWidth / 90))
        let step = steps.first { span / $0 <= most } ?? steps.last!
        return Array(stride(from: 0, through: span, by: Int(step)))
    }
}
