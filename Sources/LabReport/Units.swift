/// The figures of a report as people read them: bytes in binary units,
/// durations in ms, s or m, counts with thousands separators. The same
/// words in the terminal table and in the HTML report.
///
/// ```swift
/// Units.bytes(1_572_864)      // "1.5 MiB"
/// Units.duration(1_240)       // "1.24 s"
/// Units.count(1_234_567)      // "1,234,567"
/// ```
public enum Units {
    /// A byte count: `512 B`, `1.5 KiB`, `12.3 MiB`, `1.02 GiB`.
    public static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : "\(significant(value)) \(units[unit])"
    }

    /// A byte count in MiB with one decimal, as peak RSS is shown: `38.2 MiB`.
    public static func mebibytes(_ count: Int64) -> String {
        "\(fixed(Double(count) / 1_048_576, decimals: 1)) MiB"
    }

    /// A duration in milliseconds: `340 ms`, `1.24 s`, `12.5 s`, `1 m 05 s`, `1 h 02 m`.
    public static func duration(_ milliseconds: Int64) -> String {
        let sign = milliseconds < 0 ? "-" : ""
        let ms = abs(milliseconds)
        if ms < 1000 { return "\(sign)\(ms) ms" }
        if ms < 60_000 { return "\(sign)\(significant(Double(ms) / 1000)) s" }
        let seconds = ms / 1000
        if seconds < 3600 { return "\(sign)\(seconds / 60) m \(twoDigits(seconds % 60)) s" }
        return "\(sign)\(seconds / 3600) h \(twoDigits(seconds / 60 % 60)) m"
    }

    /// A moment on the timeline as a clock since the start: `0:00`, `1:30`, `12:05`, `1:02:00`.
    public static func clock(_ milliseconds: Int64) -> String {
        let seconds = max(0, milliseconds) / 1000
        if seconds < 3600 { return "\(seconds / 60):\(twoDigits(seconds % 60))" }
        return "\(seconds / 3600):\(twoDigits(seconds / 60 % 60)):\(twoDigits(seconds % 60))"
    }

    /// A count with a comma between each group of three digits: `1,234,567`.
    public static func count<Integer: BinaryInteger>(_ value: Integer) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return value < 0 ? "-" + grouped : grouped
    }

    /// Three significant digits, at most two decimals: `1.24`, `12.5`, `512`.
    static func significant(_ value: Double) -> String {
        let decimals = abs(value) < 10 ? 2 : abs(value) < 100 ? 1 : 0
        return fixed(value, decimals: decimals)
    }

    /// `value` rounded to `decimals` places, without Foundation's locale-dependent formatting.
    static func fixed(_ value: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int64((abs(value) * scale).rounded())
        let whole = scaled / Int64(scale)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard decimals > 0 else { return "\(sign)\(whole)" }
        let fraction = String(scaled % Int64(scale))
        return "\(sign)\(whole).\(String(repeating: "0", count: decimals - fraction.count))\(fraction)"
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
