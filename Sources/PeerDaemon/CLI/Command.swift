/// One `peerd` command: its name, help text, what it accepts, and its work.
struct Command: Sendable {
    /// The words that select it, e.g. `["item", "create"]`.
    var path: [String]
    var usage: String
    var summary: String
    var flags: Set<String> = []
    var options: Set<String> = []
    /// The options of `options` that may be given more than once (`--peer`);
    /// a config file may repeat only these keys.
    var repeatable: Set<String> = []
    /// Whether a config file (`--config PATH`, else `DIR/peerd.conf`) may set
    /// this command's flags and options; see ``ConfigFile``.
    var acceptsConfig = false
    var run: @Sendable (Arguments, DataDirectory) async throws -> Void

    var name: String { path.joined(separator: " ") }

    /// The exit status for a mistake on the command line or in a config file.
    /// A command that reads a config file (`peerd run`) runs as a service: its
    /// mistakes are configuration errors, kept apart from other failures so
    /// that systemd does not restart it in a loop.
    var mistakeStatus: Int32 { acceptsConfig ? ExitStatus.configuration : ExitStatus.usage }

    /// The options `Arguments.parse` accepts: the command's own, `--data`,
    /// and `--config` when it reads a config file.
    var acceptedOptions: Set<String> {
        options.union(acceptsConfig ? ["data", ConfigFile.pathOption] : ["data"])
    }
}
