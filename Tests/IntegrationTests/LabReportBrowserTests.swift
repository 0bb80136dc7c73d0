import Foundation
import LabReport
import TestSupport
import Testing

/// The lab's HTML report opened in a real browser (Debian's `chromium`,
/// headless): the timeline renders, as a screenshot of non-trivial size
/// and in the DOM with every node's lane. With `PEERSYNC_SCREENSHOT_DIR`
/// set, each test leaves its report and screenshot there to look at.
@Suite(
    "the lab's HTML report in a headless browser",
    .disabled(if: HeadlessBrowser.unavailableReason != nil, Comment(rawValue: HeadlessBrowser.unavailableReason ?? "")))
struct LabReportBrowserTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Writes `report` as `name.html`, screenshots it at 1400 × 1000 and dumps its DOM; the PNG's bytes and the DOM.
    private func render(_ report: LabReport, as name: String) async throws -> (png: Data, dom: String) {
        let html = temp.url("\(name).html")
        let png = temp.url("\(name).png")
        try HTMLReport(report).html.write(to: html, atomically: true, encoding: .utf8)
        let browser = try HeadlessBrowser()
        try await browser.screenshot(of: html, to: png, width: 1400, height: 1000)
        let dom = try await browser.dom(of: html)
        if let keep = ProcessInfo.processInfo.environment["PEERSYNC_SCREENSHOT_DIR"] {
            let directory = URL(fileURLWithPath: keep)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for file in [html, png] {
                let kept = directory.appendingPathComponent(file.lastPathComponent)
                try? FileManager.default.removeItem(at: kept)
                try FileManager.default.copyItem(at: file, to: kept)
            }
        }
        return (try Data(contentsOf: png), dom)
    }

    /// Requires a screenshot of 1400 × 1000 with more in it than a blank page, and every node's lane in the DOM.
    private func expectRendered(_ report: LabReport, png: Data, dom: String) throws {
        #expect(PNGHeader(png) == PNGHeader(width: 1400, height: 1000))
        #expect(png.count > 20_000, "a screenshot of \(png.count) bytes is too small to show a timeline")
        #expect(dom.contains("<svg class=\"timeline\""))
        #expect(dom.components(separatedBy: "<g class=\"lane\"").count - 1 == report.nodes.count)
        for node in report.nodes {
            #expect(dom.contains("<g class=\"lane\" data-node=\"\(node.name)\">"), "no lane for \(node.name)")
            #expect(dom.contains("<th scope=\"row\">\(node.name)</th>"), "no row for \(node.name)")
        }
        #expect(dom.components(separatedBy: "<g class=\"fault\"").count - 1 == report.faults.count)
    }

    @Test("a 5-node report: a 1400 × 1000 screenshot of more than 20 KB, every node's lane and row in the DOM")
    func fiveNodes() async throws {
        let report = LabReport.sample()
        let (png, dom) = try await render(report, as: "lab-report-5")
        try expectRendered(report, png: png, dom: dom)
        #expect(dom.contains("NOT converged: 1 check failed"))
    }

    @Test("a report of 20 nodes and 2 relays renders all 22 lanes")
    func twentyNodes() async throws {
        let report = LabReport.sample(nodes: 20, relays: 2, failing: false)
        let (png, dom) = try await render(report, as: "lab-report-20")
        try expectRendered(report, png: png, dom: dom)
        #expect(dom.contains("converged: every check passed"))
    }
}
