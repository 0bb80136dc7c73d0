import LabReport
import TestSupport
import Testing

@Suite("the HTML report")
struct HTMLReportTests {
    let report = LabReport.sample()

    /// How many times `part` occurs in `text`.
    private func occurrences(of part: String, in text: String) -> Int {
        text.components(separatedBy: part).count - 1
    }

    @Test("the header names the seed, nodes, relays, duration and the verdict")
    func header() {
        let html = HTMLReport(report).html
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<title>peerd-lab · seed 42 · NOT converged</title>"))
        #expect(html.contains("<section class=\"verdict fail\"><p class=\"headline\">✘ NOT converged</p>"))
        #expect(html.contains("NOT converged: 1 check failed"))
        for fact in ["<dt>nodes</dt><dd>5</dd>", "<dt>relays</dt><dd>0</dd>", "<dt>seed</dt><dd>42</dd>"] {
            #expect(html.contains(fact), "\(fact) missing")
        }
        #expect(html.contains("1 m 00 s asked, 1 m 15 s run"))
        #expect(html.contains("<dd>2026-12-01 12:00:00 UTC</dd>"))
        #expect(html.contains("<dt>last heal → converged</dt><dd>1:02 → 1:02 (+768 ms)</dd>"))
        #expect(HTMLReport(LabReport.sample(failing: false)).html.contains("verdict pass"))
    }

    @Test("the rate asked, the conflicts counted and a fault kind left out are facts of the run")
    func conflictsAndLeftOut() {
        var report = LabReport.sample()
        report.configuration.rate = 25
        report.configuration.unavailable = ["clock": "no --clock-offset-ms in this peerd"]
        report.conflicts = LabReport.Conflicts(concurrentEdits: 12, claims: 3, takeovers: 1)
        let html = HTMLReport(report).html
        #expect(html.contains("<dt>rate asked</dt><dd>25 writes/s</dd>"))
        #expect(html.contains("<dt>conflicts</dt><dd>\(report.conflicts!.summary)</dd>"))
        #expect(html.contains("<dt>left out: clock</dt><dd>no --clock-offset-ms in this peerd</dd>"))
        #expect(!HTMLReport(LabReport.sample()).html.contains("<dt>conflicts</dt>"), "an older report has none")
    }

    @Test("every node has a lane in the SVG and a row in the table, with its figures")
    func nodes() throws {
        let html = HTMLReport(report).html
        #expect(occurrences(of: "<svg", in: html) == 1)
        #expect(occurrences(of: "<g class=\"lane\"", in: html) == report.nodes.count)
        for node in report.nodes {
            #expect(html.contains("<g class=\"lane\" data-node=\"\(node.name)\">"))
            #expect(html.contains(">\(node.name)</text>"), "\(node.name) has no label")
            #expect(html.contains("<tr><th scope=\"row\">\(node.name)</th><td>\(node.role)</td>"))
            #expect(html.contains("title=\"\(node.stateHash)\">\(node.shortStateHash)</td>"))
            #expect(html.contains(Units.mebibytes(node.peakRSSBytes)))
        }
        #expect(occurrences(of: "<path class=\"held\"", in: html) == report.nodes.count)
    }

    @Test("a node whose state hash differs from most nodes' is marked in the table")
    func oddHash() {
        var report = report
        report.nodes[3].stateHash = "0badc0de" + String(repeating: "0", count: 56)
        let html = HTMLReport(report).html
        #expect(occurrences(of: "<td class=\"hash odd-one\"", in: html) == 1)
        #expect(html.contains("<td class=\"hash odd-one\" title=\"\(report.nodes[3].stateHash)\">0badc0de</td>"))
    }

    @Test("one band per fault, with its kind's colour and its description as a tooltip, and a legend")
    func faultBands() {
        let html = HTMLReport(report).html
        #expect(occurrences(of: "<g class=\"fault\"", in: html) == report.faults.count)
        #expect(html.contains("<g class=\"fault\" data-kind=\"partition\" fill=\"#f59e0b\"><title>partition 0:08–0:21"))
        for fault in report.faults {
            #expect(html.contains("): \(fault.description.htmlEscaped)</title>"), "\(fault.description) has no tooltip")
        }
        // The delay hits n1 and n3, not n2: two rectangles in its band.
        let delay = html.components(separatedBy: "data-kind=\"delay\"")[1].components(separatedBy: "</g>")[0]
        #expect(occurrences(of: "<rect", in: delay) == 2)
        #expect(html.contains("<ul class=\"legend\">"))
        #expect(html.contains("</span>kill ×1</li>"))
    }

    @Test("one tick per write, acknowledged and not told apart")
    func writeTicks() {
        let html = HTMLReport(report).html
        let unacknowledged = report.writes.count - report.acknowledgedWrites
        #expect(unacknowledged > 0)
        #expect(occurrences(of: "<line class=\"write ack\"", in: html) == report.acknowledgedWrites)
        #expect(occurrences(of: "<line class=\"write unack\"", in: html) == unacknowledged)
        #expect(html.contains(", not acknowledged</title>"))
    }

    @Test("the last heal and convergence are marked, and each node's convergence is a dot")
    func markers() {
        let html = HTMLReport(report).html
        #expect(html.contains("<g class=\"marker heal\">"))
        #expect(html.contains("last heal 1:02</text>"))
        #expect(html.contains("<g class=\"marker converged\">"))
        #expect(occurrences(of: "<circle class=\"node-converged\"", in: html) == report.nodes.count)
    }

    @Test("a run that never converged has no convergence marker, and its laggard says so")
    func neverConverged() {
        var report = report
        report.convergedAtMs = nil
        report.nodes[2].convergedAfterHealMs = nil
        let html = HTMLReport(report).html
        #expect(!html.contains("marker converged"))
        #expect(html.contains("the nodes never converged after the last heal"))
        #expect(occurrences(of: ">never converged</text>", in: html) == 1)
        #expect(html.contains("<td class=\"num never\">never</td>"))
    }

    @Test("text from the report is escaped: a <script> in a description, node name or detail stays text")
    func escaping() {
        var report = report
        report.faults[1].description = "<script>alert(\"loss\")</script>"
        report.nodes[0].name = "n<b>1</b>"
        report.checks[2].details.append("item <script>x</script> & more")
        let html = HTMLReport(report).html
        #expect(!html.contains("<script"))
        #expect(!html.contains("<b>"))
        #expect(html.contains("&lt;script&gt;alert(&quot;loss&quot;)&lt;/script&gt;"))
        #expect(html.contains("data-node=\"n&lt;b&gt;1&lt;/b&gt;\""))
        #expect(html.contains("<li>item &lt;script&gt;x&lt;/script&gt; &amp; more</li>"))
    }

    @Test("the file is self-contained: no scripts, links, fonts or images from elsewhere")
    func selfContained() {
        let html = HTMLReport(report).html
        for part in ["<script", "<link", "<img", "src=", "@import", "url(", "https://"] {
            #expect(!html.contains(part), "\(part) in the report")
        }
        #expect(occurrences(of: "http://", in: html) == 1)  // the SVG namespace
    }

    @Test("20 nodes and 2 relays: a lane for each, shorter lanes, the same marks")
    func twentyNodes() throws {
        let big = LabReport.sample(nodes: 20, relays: 2)
        let html = HTMLReport(big).html
        #expect(occurrences(of: "<g class=\"lane\"", in: html) == 22)
        for node in big.nodes {
            #expect(html.contains("data-node=\"\(node.name)\""))
        }
        #expect(html.contains("<tr><th scope=\"row\">r2</th><td>relay</td>"))
        #expect(occurrences(of: "<g class=\"fault\"", in: html) == big.faults.count)
        #expect(occurrences(of: "<line class=\"write ", in: html) == big.writes.count)
        #expect(html.contains("height=\"23\"/>"))  // a lane of 520 / 22 px
        #expect(HTMLReport(report).html.contains("height=\"64\"/>"))
    }

    @Test("a long run gets a wider plot, its ticks still about 90 px apart")
    func longRun() throws {
        var long = report
        long.elapsedMs = 600_000
        let html = HTMLReport(long).html
        #expect(html.contains("<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"3752\""))
        #expect(html.contains(">0:15</text>"))
        #expect(html.contains(">10:00</text>"))
        #expect(!html.contains(">0:05</text>"))
    }
}
