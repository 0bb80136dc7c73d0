import Foundation

/// `peerd COMMAND --help`: the usage, the summary, and one line for every
/// flag and option the command accepts, drawn from what it declares, so that
/// no option it takes is left out of its help.
///
/// ```
/// usage: peerd items [--json] [--include-deleted]
///
/// Lists items that are not deleted, sorted by name.
///
/// Options:
///   --json             print JSON
///   --include-deleted  deleted ones too
///   --data DIR         the data directory (default: $PEERD_DATA, else ./peerd-data)
///   --help             show this help
/// ```
extension Command {
    /// One line of the options list: `--name PLACEHOLDER` and what it does.
    struct OptionLine {
        var name: String
        /// The value's placeholder (`DIR`, `HOST:PORT`); nil for a flag.
        var placeholder: String?
        var text: String

        var spelled: String { "--" + name + (placeholder.map { " " + $0 } ?? "") }
    }

    /// What the options every command shares do; a command's own options are
    /// described in its summary.
    static let sharedOptionText: [String: String] = [
        "json": "print JSON",
        "idempotency-key": "a retry with the same KEY stores the write once",
        "scope": "the scope of the feed written to (default: default)",
        "admin-key": "the cluster's admin key file (`peerd admin-key`)",
        "include-deleted": "deleted ones too",
    ]

    /// Every flag and option the command accepts, in the order its usage
    /// names them, then `--data`, `--config` and `--help`.
    var optionLines: [OptionLine] {
        let own = flags.union(options).sorted { (usagePosition($0), $0) < (usagePosition($1), $1) }
        var lines = own.map { name in
            var text = Self.sharedOptionText[name] ?? ""
            if repeatable.contains(name) { text += text.isEmpty ? "may be given more than once" : "; may repeat" }
            return OptionLine(
                name: name, placeholder: flags.contains(name) ? nil : placeholder(of: name, default: "VALUE"),
                text: text)
        }
        lines.append(
            OptionLine(
                name: "data", placeholder: "DIR", text: "the data directory (default: $PEERD_DATA, else ./peerd-data)"))
        if acceptsConfig {
            lines.append(
                OptionLine(
                    name: ConfigFile.pathOption, placeholder: placeholder(of: ConfigFile.pathOption, default: "PATH"),
                    text: "`key = value` settings for the options above (default: DIR/\(ConfigFile.defaultName) "
                        + "when it exists); the command line overrides them"))
        }
        lines.append(OptionLine(name: "help", placeholder: nil, text: "show this help"))
        return lines
    }

    var help: String {
        let lines = optionLines
        let width = lines.map(\.spelled.count).max() ?? 0
        var text = "usage: peerd \(usage)\n\n\(summary)\n\nOptions:\n"
        for line in lines {
            let padded = line.spelled.padding(toLength: width, withPad: " ", startingAt: 0)
            text += line.text.isEmpty ? "  \(line.spelled)\n" : "  \(padded)  \(line.text)\n"
        }
        return text
    }

    /// Where the usage names `--name`, for ordering; options it does not
    /// name come last.
    private func usagePosition(_ name: String) -> Int {
        usageWords.firstIndex { $0.name == name } ?? Int.max
    }

    /// The word after `--name` in the usage (`--listen HOST:PORT` gives
    /// `HOST:PORT`), else `fallback`.
    private func placeholder(of name: String, default fallback: String) -> String {
        usageWords.first { $0.name == name }?.value ?? fallback
    }

    /// The usage's `--name` words, each with the word after it when that is
    /// not another option, brackets and `...` trimmed.
    private var usageWords: [(name: String, value: String?)] {
        let words = usage.split(separator: " ").map { $0.trimmingCharacters(in: Self.punctuation) }
        return words.indices.compactMap { index in
            guard words[index].hasPrefix("--") else { return nil }
            let next = index + 1 < words.count ? words[index + 1] : ""
            let value = next.isEmpty || next.hasPrefix("-") ? nil : next
            return (String(words[index].dropFirst(2)), value)
        }
    }

    private static let punctuation = CharacterSet(charactersIn: "[]()|.")
}
