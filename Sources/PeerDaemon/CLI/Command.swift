/// One `peerd` command: its name, help text, what it accepts, and its work.
struct Command: Sendable {
    /// The words that select it, e.g. `["item", "create"]`.
    var path: [String]
    var usage: String
    var summary: String
    var flags: Set<String> = []
    var options: Set<String> = []
    var run: @Sendable (Arguments, DataDirectory) throws -> Void

    var name: String { path.joined(separator: " ") }

    var help: String {
        var text = "usage: peerd \(usage)\n\n\(summary)\n\nOptions:\n"
        text += "  --data DIR   the data directory (default: $PEERD_DATA, else ./peerd-data)\n"
        text += "  --help       show this help\n"
        return text
    }
}
