/// A config file that cannot be used: one line naming the file (and the
/// line, when one is at fault) and what is wrong. `peerd` prints it and exits
/// with code 78 (``ExitStatus/configuration``) before the command starts.
///
/// ```
/// peerd: /var/lib/peerd/peerd.conf:3: unknown key "listn"; known keys: listen, log-level, no-mdns, peer
/// ```
struct ConfigError: Error, Equatable, CustomStringConvertible {
    /// The config file.
    var path: String
    /// The 1-based line at fault, or `nil` for the file as a whole.
    var line: Int?
    var message: String

    init(path: String, line: Int? = nil, _ message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    var description: String {
        if let line { return "\(path):\(line): \(message)" }
        return "\(path): \(message)"
    }
}
