/// A command line split into positional words, flags and options, checked
/// against what one command accepts.
struct Arguments: Sendable {
    var positional: [String] = []
    var flags: Set<String> = []
    var options: [String: String] = [:]
    /// Every value of every option, in order, for options that may repeat.
    var repeated: [String: [String]] = [:]

    /// Parses `words` for a command that takes `flags` (`--json`) and
    /// `options` (`--data DIR` or `--data=DIR`). `--` ends option parsing.
    static func parse(_ words: [String], flags: Set<String>, options: Set<String>) throws -> Arguments {
        var result = Arguments()
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || !word.hasPrefix("--") || word == "-" {
                result.positional.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inlineValue = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            if flags.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                result.flags.insert(name)
            } else if options.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < words.count else { throw UsageError("--\(name) needs a value") }
                    value = words[index]
                    index += 1
                }
                result.options[name] = value
                result.repeated[name, default: []].append(value)
            } else {
                throw UsageError("unknown option \(word)")
            }
        }
        return result
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// These arguments laid over `base` (a config file's): a flag set in
    /// either is set; an option given here wins, and for an option that may
    /// repeat, its values here replace all of those in `base` (a `--peer` on
    /// the command line replaces every `peer` of the file).
    ///
    /// ```swift
    /// let file = Arguments(options: ["listen": "0.0.0.0:4100", "log-level": "debug"])
    /// let line = Arguments(options: ["listen": "127.0.0.1:0"])
    /// line.over(file).options  // ["listen": "127.0.0.1:0", "log-level": "debug"]
    /// ```
    func over(_ base: Arguments) -> Arguments {
        var merged = base
        merged.positional = positional
        merged.flags.formUnion(flags)
        merged.options.merge(options) { $1 }
        merged.repeated.merge(repeated) { $1 }
        return merged
    }

    /// Exactly `names.count` positional words, named in the error when missing.
    func positional(_ names: String...) throws -> [String] {
        guard positional.count == names.count else {
            if positional.count < names.count {
                throw UsageError("missing \(names[positional.count...].joined(separator: " "))")
            }
            throw UsageError("unexpected argument \"\(positional[names.count])\"")
        }
        return positional
    }
}

/// A mistake on the command line: printed with the command's help; exit code
/// 2 (78 for `peerd run`: ``Command/mistakeStatus``).
struct UsageError: Error, CustomStringConvertible {
    let description: String
    /// The option whose value is wrong, and that value, when one is at
    /// fault: set in a config file, the error names the file's line.
    let option: String?
    let value: String?

    init(_ message: String, option: String? = nil, value: String? = nil) {
        description = message
        self.option = option
        self.value = value
    }

    /// `--OPTION EXPECTED, not "VALUE"`, naming both for a config file's line.
    static func badValue(_ value: String, of option: String, _ expected: String) -> UsageError {
        UsageError("--\(option) \(expected), not \"\(value)\"", option: option, value: value)
    }
}

/// A failure the user must act on: printed as one line; exit code 1.
struct CommandError: Error, CustomStringConvertible {
    let description: String
    /// The HTTP API's error code when a running daemon refused the request.
    let code: String?

    init(_ message: String, code: String? = nil) {
        description = message
        self.code = code
    }
}
