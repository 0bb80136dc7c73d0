/// The timeline's legend, the per-node table and the checks of the HTML report.
extension HTMLReport {
    var legend: String {
        var entries = FaultPalette.kinds(in: report.faults).map { kind in
            let count = report.faults.count(where: { $0.kind == kind })
            return "<li><span class=\"swatch\" style=\"background:\(FaultPalette.colour(of: kind))\"></span>"
                + "\(kind.htmlEscaped) ×\(count)</li>"
        }
        entries += [
            "<li><span class=\"key held\"></span>events held</li>",
            "<li><span class=\"key ack\"></span>acknowledged write</li>",
            "<li><span class=\"key unack\"></span>write not acknowledged</li>",
            "<li><span class=\"key heal\"></span>last heal</li>",
            "<li><span class=\"key converged\"></span>converged (dot: each node)</li>",
        ]
        return "<ul class=\"legend\">\(entries.joined())</ul>\n"
    }

    var nodeTable: String {
        // The hash most nodes hold; a node with another one is marked.
        let hashes = Dictionary(grouping: report.nodes, by: \.stateHash).mapValues(\.count)
        let common = hashes.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?.key
        let rows = report.nodes.map { node in
            let hashClass = node.stateHash == common ? "hash" : "hash odd-one"
            let never = node.convergedAfterHealMs == nil ? " never" : ""
            return """
                <tr><th scope="row">\(node.name.htmlEscaped)</th><td>\(node.role.htmlEscaped)</td>\
                <td class="num">\(Units.count(node.events))</td>\
                <td title="\(Self.cursorTooltip(node).htmlEscaped)">\(node.cursorSummary.htmlEscaped)</td>\
                <td class="\(hashClass)" title="\(node.stateHash.htmlEscaped)">\(node.shortStateHash.htmlEscaped)</td>\
                <td class="num\(never)">\(node.convergedAfterHeal)</td>\
                <td class="num">\(Units.bytes(node.bytesSent))</td><td class="num">\(Units.bytes(node.bytesReceived))</td>\
                <td class="num">\(Units.mebibytes(node.peakRSSBytes))</td></tr>
                """
        }
        return """
            <section class="card">
            <h2>Nodes</h2>
            <table class="nodes">
            <thead><tr><th>node</th><th>role</th><th class="num">events</th><th>cursor</th><th>state hash</th>\
            <th class="num">converged after heal</th><th class="num">sent</th><th class="num">received</th>\
            <th class="num">peak RSS</th></tr></thead>
            <tbody>
            \(rows.joined(separator: "\n"))
            </tbody>
            </table>
            </section>

            """
    }

    var checkList: String {
        let items = report.checks.map { check in
            let details =
                check.passed || check.details.isEmpty
                ? "" : "<ul class=\"details\">" + check.details.map { "<li>\($0.htmlEscaped)</li>" }.joined() + "</ul>"
            return "<li class=\"\(check.passed ? "pass" : "fail")\"><span class=\"mark\">\(check.passed ? "✔" : "✘")"
                + "</span> \(check.name.htmlEscaped)\(details)</li>"
        }
        let list = items.isEmpty ? "<p>No check ran.</p>" : "<ul class=\"checks\">\(items.joined(separator: "\n"))</ul>"
        return """
            <section class="card">
            <h2>Checks</h2>
            \(list)
            <p class="verdict-line \(report.passed ? "pass" : "fail")">\(report.verdict.htmlEscaped)</p>
            </section>

            """
    }

    /// Every feed of the cursor, `feed → seq`, one a line, for the cell's tooltip.
    static func cursorTooltip(_ node: LabReport.Node) -> String {
        node.cursor.sorted { $0.key < $1.key }.map { "\($0.key) → \($0.value)" }.joined(separator: "\n")
    }
}
