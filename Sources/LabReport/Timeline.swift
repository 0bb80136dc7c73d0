/// The report's SVG timeline: one lane per node with the events it held
/// over time as a step line, faults as translucent bands over the lanes
/// and times they hit (with their description as a tooltip), writes as
/// ticks (acknowledged ones short and dark, the others tall and red), and
/// vertical markers at the last heal and at convergence; each node's own
/// moment of convergence is a dot in its lane.
///
/// Every element a test or a stylesheet looks for has a class: `lane`
/// (with `data-node`), `fault` (with `data-kind`), `write ack` /
/// `write unack`, `held`, `marker heal`, `marker converged`, `node-converged`.
struct Timeline {
    let report: LabReport
    let layout: TimelineLayout

    init(_ report: LabReport) {
        self.report = report
        layout = TimelineLayout(spanMs: report.elapsedMs, lanes: report.nodes.count)
    }

    /// The `<svg>` element.
    var svg: String {
        let width = Self.number(layout.width)
        let height = Self.number(layout.height)
        var svg = """
            <svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" \
            viewBox="0 0 \(width) \(height)" role="img" aria-label="timeline of the run">

            """
        svg += axis
        svg += report.nodes.indices.map(lane).joined()
        svg += report.faults.map(band).joined()
        svg += report.nodes.indices.map(heldLine).joined()
        svg += report.writes.compactMap(tick).joined()
        svg += markers
        svg += "</svg>\n"
        return svg
    }

    /// Lane index by node name.
    private var laneIndex: [String: Int] {
        Dictionary(report.nodes.enumerated().map { ($1.name, $0) }) { first, _ in first }
    }

    /// The most events any node held, at any sample or at the end: the top of every lane.
    private var maxEvents: Int64 {
        max(report.samples.map(\.events).max() ?? 0, report.nodes.map(\.events).max() ?? 0, 1)
    }

    private var axis: String {
        var svg = "<g class=\"axis\">\n"
        let top = Self.number(TimelineLayout.top)
        let bottom = Self.number(layout.lanesBottom)
        for tick in layout.ticks {
            let x = Self.number(layout.x(tick))
            svg += "<line class=\"grid\" x1=\"\(x)\" y1=\"\(top)\" x2=\"\(x)\" y2=\"\(bottom)\"/>"
            svg += "<text class=\"tick-label\" x=\"\(x)\" y=\"\(Self.number(layout.lanesBottom + 18))\" "
            svg += "text-anchor=\"middle\">\(Units.clock(tick))</text>\n"
        }
        return svg + "</g>\n"
    }

    private func lane(_ index: Int) -> String {
        let node = report.nodes[index]
        let top = layout.laneTop(index)
        let name = node.name.htmlEscaped
        var svg = "<g class=\"lane\" data-node=\"\(name)\">"
        svg += "<rect class=\"lane-bg\(index % 2 == 1 ? " odd" : "")\" x=\"\(Self.number(TimelineLayout.labelWidth))\" "
        svg += "y=\"\(Self.number(top))\" width=\"\(Self.number(layout.plotWidth))\" "
        svg += "height=\"\(Self.number(layout.laneHeight))\"/>"
        let labelX = Self.number(TimelineLayout.labelWidth - 10)
        if layout.laneHeight >= 40 {
            svg += "<text class=\"lane-label\" x=\"\(labelX)\" y=\"\(Self.number(top + layout.laneHeight / 2 - 2))\" "
            svg += "text-anchor=\"end\">\(name)</text>"
            svg += "<text class=\"lane-detail\" x=\"\(labelX)\" y=\"\(Self.number(top + layout.laneHeight / 2 + 13))\" "
            svg += "text-anchor=\"end\">\(node.role.htmlEscaped) · \(Units.count(node.events))</text>"
        } else {
            svg +=
                "<text class=\"lane-label small\" x=\"\(labelX)\" y=\"\(Self.number(top + layout.laneHeight / 2 + 4))\" "
            svg += "text-anchor=\"end\">\(name)<tspan class=\"lane-detail\"> \(Units.count(node.events))</tspan></text>"
        }
        return svg + "</g>\n"
    }

    private func band(_ fault: LabReport.Fault) -> String {
        let index = laneIndex
        let lanes = Set(fault.nodes.compactMap { index[$0] })
        // A fault that names no node of the table hit the whole lab.
        let hit = lanes.isEmpty ? Array(report.nodes.indices) : lanes.sorted()
        let x = layout.x(fault.startMs)
        let width = max(layout.x(fault.endMs) - x, 3)
        let kind = fault.kind.htmlEscaped
        var svg = "<g class=\"fault\" data-kind=\"\(kind)\" fill=\"\(FaultPalette.colour(of: fault.kind))\">"
        svg += "<title>\(kind) \(Units.clock(fault.startMs))–\(Units.clock(fault.endMs)) "
        svg += "(\(Units.duration(fault.endMs - fault.startMs))): \(fault.description.htmlEscaped)</title>"
        for run in Self.contiguousRuns(hit) {
            let top = layout.laneTop(run.lowerBound)
            let height = layout.laneHeight * Double(run.count)
            svg += "<rect x=\"\(Self.number(x))\" y=\"\(Self.number(top + 1))\" width=\"\(Self.number(width))\" "
            svg += "height=\"\(Self.number(height - 2))\" rx=\"2\"/>"
        }
        return svg + "</g>\n"
    }

    private func heldLine(_ index: Int) -> String {
        let node = report.nodes[index]
        guard let samples = report.samplesByNode[node.name], let first = samples.first else { return "" }
        let most = maxEvents
        let baseline = Self.number(layout.y(events: 0, of: most, lane: index))
        var path =
            "M\(Self.number(layout.x(first.atMs))) \(Self.number(layout.y(events: first.events, of: most, lane: index)))"
        var previous = first.events
        for sample in samples.dropFirst() {
            path += " H\(Self.number(layout.x(sample.atMs)))"
            if sample.events != previous {
                path += " V\(Self.number(layout.y(events: sample.events, of: most, lane: index)))"
                previous = sample.events
            }
        }
        path += " H\(Self.number(layout.x(report.elapsedMs)))"
        let area = path + " V\(baseline) H\(Self.number(layout.x(first.atMs))) Z"
        return "<path class=\"held-area\" d=\"\(area)\"/><path class=\"held\" d=\"\(path)\">"
            + "<title>\(node.name.htmlEscaped): events held over time, \(Units.count(node.events)) at the end</title>"
            + "</path>\n"
    }

    private func tick(_ write: LabReport.Write) -> String? {
        guard let index = laneIndex[write.node] else { return nil }
        let x = Self.number(layout.x(write.atMs))
        let bottom = layout.laneTop(index) + layout.laneHeight - 1
        let length = write.acknowledged ? min(7, layout.laneHeight / 3) : layout.laneHeight * 0.6
        let state = write.acknowledged ? "acknowledged" : "not acknowledged"
        return
            "<line class=\"write \(write.acknowledged ? "ack" : "unack")\" x1=\"\(x)\" y1=\"\(Self.number(bottom))\" "
            + "x2=\"\(x)\" y2=\"\(Self.number(bottom - length))\"><title>\(write.kind.htmlEscaped) "
            + "\(write.item.htmlEscaped) on \(write.node.htmlEscaped) at \(Units.clock(write.atMs)), \(state)"
            + "</title></line>\n"
    }

    private var markers: String {
        let top = TimelineLayout.top - 6
        let bottom = Self.number(layout.lanesBottom)
        let heal = layout.x(report.lastHealMs)
        var svg = "<g class=\"marker heal\"><line x1=\"\(Self.number(heal))\" y1=\"\(Self.number(top))\" "
        svg += "x2=\"\(Self.number(heal))\" y2=\"\(bottom)\"/>"
        svg += "<text x=\"\(Self.number(heal - 4))\" y=\"\(Self.number(top - 4))\" text-anchor=\"end\">"
        svg += "last heal \(Units.clock(report.lastHealMs))</text></g>\n"
        for (index, node) in report.nodes.enumerated() {
            let center = Self.number(layout.laneTop(index) + min(9, layout.laneHeight / 3))
            guard let after = node.convergedAfterHealMs else {
                let x = Self.number(TimelineLayout.labelWidth + layout.plotWidth - 4)
                svg +=
                    "<text class=\"node-never\" x=\"\(x)\" y=\"\(Self.number(layout.laneTop(index) + layout.laneHeight / 2 + 4))\" "
                svg += "text-anchor=\"end\">never converged</text>\n"
                continue
            }
            let x = Self.number(layout.x(report.lastHealMs + after))
            svg += "<circle class=\"node-converged\" cx=\"\(x)\" cy=\"\(center)\" r=\"3.5\"><title>"
            svg +=
                "\(node.name.htmlEscaped) converged \(node.convergedAfterHeal) after the last heal</title></circle>\n"
        }
        if let converged = report.convergedAtMs {
            let x = layout.x(converged)
            svg += "<g class=\"marker converged\"><line x1=\"\(Self.number(x))\" y1=\"\(Self.number(top))\" "
            svg += "x2=\"\(Self.number(x))\" y2=\"\(bottom)\"/>"
            // Near the right edge the label goes left of its line, one row above the heal's.
            let fitsRight = layout.width - x > 200
            svg +=
                "<text x=\"\(Self.number(fitsRight ? x + 4 : x - 4))\" y=\"\(Self.number(fitsRight ? top - 4 : top - 18))\""
            svg += fitsRight ? ">converged " : " text-anchor=\"end\">converged "
            svg += "\(Units.clock(converged)) (+\(Units.duration(converged - report.lastHealMs)))</text></g>\n"
        }
        return svg
    }

    /// `[0, 1, 2, 5, 6]` → `[0...2, 5...6]`.
    static func contiguousRuns(_ sorted: [Int]) -> [ClosedRange<Int>] {
        var runs: [ClosedRange<Int>] = []
        for index in sorted {
            if let last = runs.last, last.upperBound + 1 == index {
                runs[runs.count - 1] = last.lowerBound...index
            } else {
                runs.append(index...index)
            }
        }
        return runs
    }

    /// A coordinate with at most one decimal.
    static func number(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? "\(Int(tenths / 10))" : Units.fixed(value, decimals: 1)
    }
}
