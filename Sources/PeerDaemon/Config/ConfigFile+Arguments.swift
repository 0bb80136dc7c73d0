/// A config file checked against one command and turned into the
/// `Arguments` its settings stand for.
extension ConfigFile {
    /// The settings as if given on the command line: a flag set to `true` is
    /// present, `false` absent; an option holds its value, a repeatable one
    /// every value in file order.
    ///
    /// Throws, naming the line, for a key that is none of `command`'s flags
    /// or options, a flag whose value is not `true` or `false`, and a second
    /// value of an option that is not repeatable.
    func arguments(for command: Command) throws(ConfigError) -> Arguments {
        var arguments = Arguments()
        var firstLine: [String: Int] = [:]
        for entry in entries {
            if command.flags.contains(entry.key) {
                if let first = firstLine[entry.key] { throw repeated(entry, first: first, in: command) }
                switch entry.value {
                case "true": arguments.flags.insert(entry.key)
                case "false": break
                default:
                    throw ConfigError(
                        path: path, line: entry.line,
                        "\"\(entry.key)\" is true or false, not \"\(entry.value)\"")
                }
            } else if command.options.contains(entry.key) {
                if let first = firstLine[entry.key], !command.repeatable.contains(entry.key) {
                    throw repeated(entry, first: first, in: command)
                }
                arguments.options[entry.key] = entry.value
                arguments.repeated[entry.key, default: []].append(entry.value)
            } else {
                let known = command.flags.union(command.options).sorted().joined(separator: ", ")
                throw ConfigError(
                    path: path, line: entry.line, "unknown key \"\(entry.key)\"; known keys: \(known)")
            }
            firstLine[entry.key] = firstLine[entry.key] ?? entry.line
        }
        return arguments
    }

    private func repeated(_ entry: Entry, first: Int, in command: Command) -> ConfigError {
        let repeatable = command.repeatable.sorted().map { "\"\($0)\"" }
        let hint = repeatable.isEmpty ? "no key may repeat" : "only \(repeatable.joined(separator: ", ")) may repeat"
        return ConfigError(
            path: path, line: entry.line, "\"\(entry.key)\" is already set on line \(first); \(hint)")
    }
}
