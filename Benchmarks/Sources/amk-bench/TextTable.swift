/// A plain-text table with columns padded to their widest cell, for the terminal and CI logs.
struct TextTable {
    var header: [String]
    var rows: [[String]] = []

    init(_ header: [String]) {
        self.header = header
    }

    mutating func add(_ row: [String]) {
        rows.append(row)
    }

    /// The table's lines: header, a rule, then the rows; the first column left-aligned, the rest
    /// right-aligned so that numbers line up. A row with a single cell is a note spanning the width.
    func render() -> String {
        var widths = header.map(\.count)
        for row in rows where row.count > 1 {
            for (i, cell) in row.enumerated() where i < widths.count {
                widths[i] = max(widths[i], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            if cells.count == 1 { return cells[0] }
            return cells.enumerated().map { i, cell in
                let padding = String(repeating: " ", count: max(0, widths[min(i, widths.count - 1)] - cell.count))
                return i == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
        var lines = [line(header), String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1))]
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}
