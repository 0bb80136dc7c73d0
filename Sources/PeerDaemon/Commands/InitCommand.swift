import Replica

/// `peerd init`: creates the data directory and a new replica.
enum InitCommand {
    static let command = Command(
        path: ["init"], usage: "init",
        summary: "Creates the data directory with a new replica id and database; refuses to overwrite one."
    ) { arguments, directory in
        _ = try arguments.positional()
        let log = try directory.initialize()
        print("initialized replica \(log.replicaID) in \(directory.path)")
    }
}
