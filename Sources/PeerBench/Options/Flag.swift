import Foundation

/// One flag of a subcommand: its name, the value it takes, its default and its help.
struct Flag: Sendable {
    /// What follows the flag on the command line.
    enum Value: Sendable {
        /// Nothing: the flag is on or off.
        case none
        /// A positive whole number (`1_000_000` and `1000000` alike).
        case count
        /// Positive whole numbers separated by commas.
        case counts
        /// Any text (a path, a list of names).
        case text
        /// A decimal number.
        case decimal
    }

    let name: String
    let value: Value
    /// The value's name in the help, e.g. `N` or `DIR`.
    let placeholder: String
    /// Parsed like a given value when the flag is absent; nil: no value (or required).
    let defaultValue: String?
    let help: String
    /// Given more than once, every value counts (otherwise the last one).
    var repeats = false
    /// Absent means a usage error.
    var required = false
    /// A complaint about a value its type accepts but the subcommand does not, nil when it is fine.
    var check: (@Sendable (String) -> String?)?

    static func count(_ name: String, _ defaultValue: Int?, _ help: String) -> Flag {
        Flag(name: name, value: .count, placeholder: "N", defaultValue: defaultValue.map(String.init), help: help)
    }

    static func counts(_ name: String, _ defaultValue: [Int], _ help: String) -> Flag {
        Flag(
            name: name, value: .counts, placeholder: "N,...",
            defaultValue: defaultValue.map(String.init).joined(separator: ","), help: help)
    }

    static func text(_ name: String, _ placeholder: String, _ defaultValue: String?, _ help: String) -> Flag {
        Flag(name: name, value: .text, placeholder: placeholder, defaultValue: defaultValue, help: help)
    }

    static func decimal(_ name: String, _ placeholder: String, _ defaultValue: Double, _ help: String) -> Flag {
        Flag(name: name, value: .decimal, placeholder: placeholder, defaultValue: "\(defaultValue)", help: help)
    }

    static func toggle(_ name: String, _ help: String) -> Flag {
        Flag(name: name, value: .none, placeholder: "", defaultValue: nil, help: help)
    }

    /// The same flag, required.
    var isRequired: Flag {
        var flag = self
        flag.required = true
        return flag
    }

    /// The same flag, given more than once.
    var repeating: Flag {
        var flag = self
        flag.repeats = true
        return flag
    }

    /// The same flag with a check of its values (a complaint, or nil).
    func checked(_ check: @escaping @Sendable (String) -> String?) -> Flag {
        var flag = self
        flag.check = check
        return flag
    }

    /// `--peerd PATH`: the daemon under test.
    static let peerd = text(
        "--peerd", "PATH", nil, "the peerd binary to measure (default: the peerd next to peerd-bench)")

    /// `--dir DIR`: where the benchmark's files go.
    static func directory(_ what: String = "work directory, kept afterwards with every log") -> Flag {
        text("--dir", "DIR", nil, "\(what) (default: a fresh temporary directory, removed at the end)")
    }

    /// The complaint about `text` as this flag's value, nil when it parses.
    func complaint(about text: String) -> String? {
        switch value {
        case .none: return nil
        case .count:
            if Flag.positive(text) == nil { return "\(name) needs a positive whole number, not \(text)" }
        case .counts:
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            if parts.isEmpty || parts.contains(where: { Flag.positive(String($0)) == nil }) {
                return "\(name) needs positive whole numbers separated by commas, not \(text)"
            }
        case .decimal:
            if Double(text) == nil { return "\(name) needs a number, not \(text)" }
        case .text: break
        }
        return check?(text)
    }

    /// A positive count; `_` may group the digits.
    static func positive(_ text: String) -> Int? {
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else { return nil }
        return number
    }

    /// Its line in the help: `  --events N   events to ingest (default 200000)`.
    var helpLine: String {
        let left = "  \(name)\(placeholder.isEmpty ? "" : " \(placeholder)")"
        let padded = left.padding(toLength: max(left.count + 2, 24), withPad: " ", startingAt: 0)
        let shown = defaultValue.map { " (default \($0))" } ?? (required ? " (required)" : "")
        return padded + help + shown
    }
}
