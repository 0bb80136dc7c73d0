import CLinux
import Foundation
import Replica

/// Every command `peerd` knows, in the order `peerd --help` lists them.
let commands: [Command] = [
    [InitCommand.command],
    ClusterCommands.all,
    IdentityCommands.all,
    [RunCommand.command, WaitCommand.command],
    [PeersCommand.command],
    ThinClientCommands.all,
    ItemCommands.all,
    DomainCommands.all,
    SessionCommands.all,
    ReadCommands.all,
    [ExportCommand.command, ImportCommand.command],
    [CheckCommand.command],
    CheckpointCommands.all,
].flatMap { $0 }

/// The usage of every command, or of a group's (`peerd item`).
func overview(group: String? = nil) -> String {
    let prefix = group.map { "peerd \($0)" } ?? "peerd"
    var text =
        "usage: \(prefix) COMMAND [ARGS] [--data DIR]\n\n\(group == nil ? "PeerSync replica daemon.\n\n" : "")Commands:\n"
    for command in commands where group == nil || command.path.first == group { text += "  \(command.usage)\n" }
    text += "\nRun `\(prefix) COMMAND --help` for one command's help.\n"
    return text
}

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("peerd: \(message)\n".utf8))
    exit(code)
}

peersync_tune_heap()
let words = Array(CommandLine.arguments.dropFirst())
if words.isEmpty || words == ["--help"] || words == ["help"] {
    print(overview(), terminator: "")
    exit(words.isEmpty ? 2 : 0)
}
// The longest command path that prefixes the words selects the command.
let match = commands.filter { Array(words.prefix($0.path.count)) == $0.path }.max { $0.path.count < $1.path.count }
guard let command = match else {
    // `peerd item --help` (or `peerd item` with no command, options only): the group's commands.
    let isGroup = commands.contains { $0.path.count > 1 && $0.path.first == words[0] }
    if isGroup, words.count == 1 || words[1].hasPrefix("-") {
        let text = overview(group: words[0])
        if !words.contains("--help") { fail("\"\(words[0])\" needs a command\n\(text)", code: 2) }
        print(text, terminator: "")
        exit(0)
    }
    let known = commands.contains { $0.path.first == words[0] }
    fail(
        known
            ? "\"\(words.prefix(2).joined(separator: " "))\" is not a command; see `peerd --help`"
            : "unknown command \"\(words[0])\"; see `peerd --help`", code: 2)
}
let rest = Array(words.dropFirst(command.path.count))
if rest.contains("--help") {
    print(command.help, terminator: "")
    exit(0)
}
var given = Arguments()
var configFile: ConfigFile?
do {
    given = try Arguments.parse(rest, flags: command.flags, options: command.acceptedOptions)
    let directory = DataDirectory(option: given.options["data"])
    // A config file's settings, under what the command line gives, before the command starts.
    let configured = try ConfigFile.apply(to: given, of: command, directory: directory)
    configFile = configured.file
    try await command.run(configured.arguments, directory)
} catch let error as UsageError {
    // A wrong value from the config file: one line naming the file and line, as for its other mistakes.
    if let blamed = configFile?.blame(error, commandLine: given) { fail("\(blamed)", code: command.mistakeStatus) }
    fail("\(error)\n\(command.help)", code: command.mistakeStatus)
} catch let error as ConfigError {
    fail("\(error)", code: command.mistakeStatus)
} catch let error as StartupConfigurationError {
    fail("error: \(error)", code: ExitStatus.configuration)
} catch {
    fail("error: \(error)", code: ExitStatus.failure)
}
