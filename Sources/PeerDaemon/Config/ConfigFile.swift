/// A `peerd` config file: settings for a command's flags and options, one
/// `key = value` per line.
///
/// ```
/// # /var/lib/peerd/peerd.conf
/// listen = 0.0.0.0:4100
/// peer = 192.168.1.20:4100
/// peer = 192.168.1.21:4100
/// no-mdns = true
/// ```
///
/// Keys are the command's long option and flag names without `--`; a flag
/// takes `true` or `false`. Blank lines and lines whose first non-blank
/// character is `#` are ignored; spaces around keys and values are too, and a
/// value is otherwise taken as written (no quotes, no trailing comments).
/// Parsing checks only this syntax; ``arguments(for:)`` checks the keys and
/// values against one command.
struct ConfigFile: Sendable, Equatable {
    /// One `key = value` line.
    struct Entry: Sendable, Equatable {
        /// The 1-based line number, for errors.
        var line: Int
        var key: String
        var value: String
    }

    /// The option that names a config file: `--config PATH`.
    static let pathOption = "config"
    /// The file read from the data directory when `--config` is not given.
    static let defaultName = "peerd.conf"

    /// Where the text came from, for errors.
    var path: String
    /// The settings in file order.
    var entries: [Entry]

    /// Parses `text`; throws for a line that is not blank, a comment or
    /// `key = value` with a non-empty key and value.
    static func parse(_ text: String, path: String) throws(ConfigError) -> ConfigFile {
        var entries: [Entry] = []
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigError(path: path, line: index + 1, "expected `key = value`, not \"\(line)\"")
            }
            let key = line[..<equals].trimmingSpaces
            let value = line[line.index(after: equals)...].trimmingSpaces
            guard !key.isEmpty else {
                throw ConfigError(path: path, line: index + 1, "no key before `=` in \"\(line)\"")
            }
            guard !value.isEmpty else {
                throw ConfigError(path: path, line: index + 1, "\"\(key)\" needs a value after `=`")
            }
            entries.append(Entry(line: index + 1, key: String(key), value: String(value)))
        }
        return ConfigFile(path: path, entries: entries)
    }
}

extension Substring {
    /// Without leading and trailing spaces, tabs and carriage returns (a
    /// file written on Windows ends its lines with `\r\n`).
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
