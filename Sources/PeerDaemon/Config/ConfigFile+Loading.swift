import Foundation

/// Finding and reading the config file of a command that accepts one.
extension ConfigFile {
    /// `--config PATH` (which must exist), else `DIR/peerd.conf` when it
    /// exists, else `nil`.
    static func load(_ arguments: Arguments, directory: DataDirectory) throws(ConfigError) -> ConfigFile? {
        if let path = arguments.options[pathOption] {
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConfigError(path: path, "no such config file (given with --\(pathOption))")
            }
            return try read(path)
        }
        let path = (directory.path as NSString).appendingPathComponent(defaultName)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try read(path)
    }

    /// Reads and parses the file at `path`, which must be UTF-8.
    static func read(_ path: String) throws(ConfigError) -> ConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(path: path, "cannot read the config file (is it a readable file?)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(path: path, "the config file is not UTF-8 text")
        }
        return try parse(text, path: path)
    }

    /// `arguments` over the config file of `command`, when there is one:
    /// what the command line gives wins (see ``Arguments/over(_:)``).
    static func apply(
        to arguments: Arguments, of command: Command, directory: DataDirectory
    ) throws(ConfigError) -> (arguments: Arguments, file: ConfigFile?) {
        guard command.acceptsConfig, let file = try load(arguments, directory: directory) else {
            return (arguments, nil)
        }
        return (arguments.over(try file.arguments(for: command)), file)
    }

    /// `error` as the line of this file that set the wrong value, when the
    /// value came from the file (the command line did not give the option).
    func blame(_ error: UsageError, commandLine: Arguments) -> ConfigError? {
        guard let option = error.option, commandLine.options[option] == nil, commandLine.repeated[option] == nil,
            let entry = entries.first(where: { $0.key == option && (error.value == nil || $0.value == error.value) })
        else { return nil }
        return ConfigError(path: path, line: entry.line, error.description)
    }
}
