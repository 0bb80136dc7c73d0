import Foundation

/// `peerd thin-client add|list|remove`: the device tokens with which thin
/// clients (the seed's phone client) may call `POST /events` and `GET
/// /events` (docs/relay.md). They change `DIR/thin-clients` whether or not
/// the daemon runs; a running daemon sees the change at the next request.
enum ThinClientCommands {
    static let all: [Command] = [
        Command(
            path: ["thin-client", "add"], usage: "thin-client add NAME [--read SCOPES] [--write SCOPES]",
            summary: """
                Issues a device token for the thin client NAME (letters, digits, `.`, `_`, `-`) and prints it \
                once; only its SHA-256 is kept, in DIR/thin-clients. The device sends it as \
                `Authorization: Bearer TOKEN` and may then call POST /events, GET /events and the session reads \
                (GET /entities/TYPE/ID/session and …/dropped), nothing else. --read and --write limit the scopes \
                of the events it pulls and pushes (comma-separated, \"\" for none, * for all; default: all).
                """,
            options: ["read", "write"]
        ) { arguments, directory in
            let name = try arguments.positional("NAME")[0]
            guard DeviceTokens.isValidName(name) else {
                throw CommandError(
                    "a thin-client name is 1 to 64 letters, digits, `.`, `_` or `-`, not \"\(name)\"")
            }
            let device = DeviceTokens.Device(
                name: name,
                readScopes: try arguments.options["read"].map { try IdentityCommands.scopes($0, option: "read") },
                writeScopes: try arguments.options["write"].map { try IdentityCommands.scopes($0, option: "write") })
            let token = try changeTokens(in: directory) { tokens in
                guard !tokens.contains(name) else {
                    throw CommandError(
                        "thin client \(name) already has a token; `peerd thin-client remove \(name)` first to issue "
                            + "a new one")
                }
                return tokens.add(device)
            }
            print(token)
        },
        Command(
            path: ["thin-client", "list"], usage: "thin-client list",
            summary: """
                Lists the thin clients that have a device token, one a line: the name, then `read=…` and \
                `write=…` for a device whose scopes are limited.
                """
        ) { arguments, directory in
            _ = try arguments.positional()
            try directory.requireReplica()
            for entry in try DeviceTokens.read(from: DeviceTokens.path(in: directory.path)).devices {
                let device = entry.device
                var line = device.name
                if let read = device.readScopes { line += " read=" + read.joined(separator: ",") }
                if let write = device.writeScopes { line += " write=" + write.joined(separator: ",") }
                print(line)
            }
        },
        Command(
            path: ["thin-client", "remove"], usage: "thin-client remove NAME",
            summary: "Withdraws the device token of the thin client NAME; its next request gets 401."
        ) { arguments, directory in
            let name = try arguments.positional("NAME")[0]
            try changeTokens(in: directory) { tokens in
                guard tokens.remove(name) else {
                    throw CommandError("no thin client \(name); see `peerd thin-client list`")
                }
            }
        },
    ]

    /// Reads, changes and writes `DIR/thin-clients` while holding a lock
    /// on `DIR/thin-clients.lock`, so two commands at once lose no change.
    private static func changeTokens<T>(in directory: DataDirectory, _ change: (inout DeviceTokens) throws -> T)
        throws -> T
    {
        try directory.requireReplica()
        let path = DeviceTokens.path(in: directory.path)
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw CommandError("cannot open \(path).lock: \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw CommandError("cannot lock \(path).lock: \(String(cString: strerror(errno)))")
            }
        }
        var tokens = try DeviceTokens.read(from: path)
        let result = try change(&tokens)
        try tokens.write(to: path)
        return result
    }
}
