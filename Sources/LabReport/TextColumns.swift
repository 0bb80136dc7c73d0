/// Rows of cells laid out in aligned columns of plain text, each column as
/// wide as its widest cell, two spaces apart; numbers right-aligned.
struct TextColumns {
    enum Alignment { case left, right }

    var alignments: [Alignment]
    var rows: [[String]] = []

    init(_ alignments: [Alignment]) { self.alignments = alignments }

    mutating func append(_ row: [String]) {
        precondition(row.count == alignments.count, "a row of \(row.count) cells for \(alignments.count) columns")
        rows.append(row)
    }

    /// One line per row, without trailing spaces.
    var lines: [String] {
        let widths = alignments.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                if column > 0 { line += "  " }
                line += alignments[column] == .left ? cell + padding : padding + cell
            }
            return String(line.reversed().drop { $0 == " " }.reversed())
        }
    }
}
