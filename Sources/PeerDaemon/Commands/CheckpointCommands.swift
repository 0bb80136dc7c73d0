import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd checkpoint make|show|export|start`: checkpoints of the state
/// (docs/operations.md "Checkpoints").
enum CheckpointCommands {
    static let all: [Command] = [make, show, export, start, take]

    static let make = Command(
        path: ["checkpoint", "make"], usage: "checkpoint make [--admin-key FILE] [--json]",
        summary: """
            Computes a checkpoint of everything this replica holds (its cursor, each feed's chain link there, \
            the state hash and the digest of every entity's state), signs it and takes it: from then on each \
            entity folds the events after it on top of its state there. In a cluster with an admin key only that \
            admin signs checkpoints (--admin-key FILE); in an open cluster the replica signs with its identity \
            key. Safe while `peerd run` runs: the daemon then shows it to its peers, and every replica that \
            holds the events recomputes and takes it. Prints the checkpoint's id and what it covers.
            """,
        flags: ["json"], options: ["admin-key"]
    ) { arguments, directory in
        _ = try arguments.positional()
        let log = try directory.openLog()
        let (key, signer) = try signingKey(directory, log: log, adminKeyFile: arguments.options["admin-key"])
        let content = try log.makeCheckpoint()
        let signed = SignedCheckpoint.sign(content, by: key, as: signer)
        if try !giveDaemon(directory, signed) { _ = try log.take(content, statement: signed.bytes) }
        let report = CheckpointReport(try log.checkpoint()!)
        print(arguments.has("json") ? report.json : report.text)
    }

    static let show = Command(
        path: ["checkpoint", "show"], usage: "checkpoint show [--json]",
        summary: """
            Prints the checkpoint this replica folds from: its id, maker, signer, the events it covers, its \
            entities and state hash, and whether this replica still holds the events it covers; "no checkpoint" \
            (exit 0) when it has none. --json prints /status's "checkpoint" object.
            """,
        flags: ["json"]
    ) { arguments, directory in
        _ = try arguments.positional()
        guard let held = try directory.openLog().checkpoint() else {
            print(arguments.has("json") ? "null" : "no checkpoint")
            return
        }
        let report = CheckpointReport(held)
        print(arguments.has("json") ? report.json : report.text)
    }

    static let export = Command(
        path: ["checkpoint", "export"], usage: "checkpoint export FILE",
        summary: """
            Writes the checkpoint this replica folds from and every entity's state there to FILE (a checkpoint \
            file, docs/protocol.md "Checkpoint files"), for `peerd checkpoint start` on a new device.
            """
    ) { arguments, directory in
        let path = try arguments.positional("FILE")[0]
        let log = try directory.openLog()
        guard let held = try log.checkpoint() else {
            throw CommandError("this replica has no checkpoint; make one with `peerd checkpoint make`")
        }
        let bytes = try CheckpointFile.write(from: log, held: held, to: path)
        print("wrote checkpoint \(Hex.string(held.content.id).prefix(16)) to \(path): \(bytes) bytes")
    }

    static let start = Command(
        path: ["checkpoint", "start"], usage: "checkpoint start FILE",
        summary: """
            Starts this replica, which must hold no event yet (right after `peerd init`), from a checkpoint file: \
            every entity takes its state there and each feed's cursor its seq, so a sync brings only the events \
            after it. In a cluster with an admin key the file must be signed by that admin; in an open cluster, \
            by the identity key of the replica that made it, which is printed. Refuses a file whose states do not \
            match its signed digests, and leaves the replica empty.
            """
    ) { arguments, directory in
        let path = try arguments.positional("FILE")[0]
        let log = try directory.openLog()
        let (statement, bases) = try CheckpointFile.read(path)
        try requireTrusted(statement, from: path, in: directory)
        do {
            try log.start(from: statement.content, statement: statement.bytes, bases: bases)
        } catch let error as CheckpointError {
            throw CommandError("\(path): \(error)")
        }
        try tellDaemon(directory, statement)
        let report = CheckpointReport(try log.checkpoint()!)
        print("started from \(report.text)")
    }

    static let take = Command(
        path: ["checkpoint", "take"], usage: "checkpoint take FILE",
        summary: """
            Recomputes the checkpoint of a checkpoint file from the events this replica holds and, when every \
            link, the state hash and the digest of every entity's state match, takes it, so that this replica \
            folds exactly as the one that made it. Every replica of a cluster takes the same checkpoint. A \
            checkpoint that does not match is refused with what differs and who made and signed it (exit 1); one \
            that covers events this replica lacks is refused until it holds them.
            """
    ) { arguments, directory in
        let path = try arguments.positional("FILE")[0]
        let log = try directory.openLog()
        let (statement, _) = try CheckpointFile.read(path)
        try requireTrusted(statement, from: path, in: directory)
        let taking: EventLog.Taking?
        do {
            let lacking = try log.cursor().missingCount(from: statement.content.cursor)
            guard lacking == 0 else {
                throw CheckpointError.notApplicable("this log lacks \(lacking) events it covers")
            }
            taking =
                try giveDaemon(directory, statement) ? nil : log.take(statement.content, statement: statement.bytes)
        } catch let error as CheckpointError {
            let signer = statement.signer == .admin ? "the admin" : "its maker"
            throw CommandError(
                "\(path): \(error) (signed by \(signer), key \(Hex.string(statement.signerKey).prefix(16))…)")
        }
        let report = CheckpointReport(try log.checkpoint()!)
        switch taking {
        case nil: print("took \(report.text), through the daemon that runs on this replica")
        case .alreadyHeld: print("already holds \(report.text)")
        case .taken(let refolded):
            print("took \(report.text); \(refolded) entities with events after it were folded again on top of it")
        }
    }

    /// The daemon running on DIR, if any, learns the checkpoint this command
    /// took, so that it shows it to its peers (`POST /checkpoints`).
    private static func tellDaemon(_ directory: DataDirectory, _ statement: SignedCheckpoint) throws {
        guard case .daemon(let api) = try ReplicaAccess.of(directory) else { return }
        _ = try api.call("POST", "/checkpoints", body: "{\"checkpoint\":\"\(Hex.string(statement.bytes))\"}")
    }

    /// Gives the checkpoint to the daemon running on DIR, which recomputes
    /// and takes it (the daemon is then the one writer) and shows it to its
    /// peers; waits until it did. False when no daemon runs: the command
    /// takes it itself.
    ///
    /// - Throws: `CheckpointError.mismatch` or `.notApplicable` when the
    ///   daemon refused it; a `CommandError` when it did not take it in 60 s.
    private static func giveDaemon(_ directory: DataDirectory, _ statement: SignedCheckpoint) throws -> Bool {
        guard case .daemon(let api) = try ReplicaAccess.of(directory) else { return false }
        let id = Hex.string(statement.content.id)
        _ = try api.call("POST", "/checkpoints", body: "{\"checkpoint\":\"\(Hex.string(statement.bytes))\"}")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let status = try JSONValue.parse(try api.call("GET", "/status"))
            if status["checkpoint"]?["id"]?.stringValue == id { return true }
            if case .array(let refused)? = status["refused_checkpoints"],
                let mine = refused.first(where: { $0["id"]?.stringValue == id })
            {
                let detail = mine["detail"]?.stringValue ?? "refused"
                throw mine["cause"]?.stringValue == "mismatch"
                    ? CheckpointError.mismatch(checkpoint: id, madeBy: statement.content.madeBy, detail: detail)
                    : CheckpointError.notApplicable(detail)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw CommandError("the daemon on \(directory.path) did not take checkpoint \(id.prefix(16)) within 60 s")
    }

    /// In a cluster with an admin key, a checkpoint counts only if that admin signed it.
    private static func requireTrusted(_ statement: SignedCheckpoint, from path: String, in directory: DataDirectory)
        throws
    {
        guard let certificate = try directory.certificate(),
            !statement.isTrusted(adminKey: certificate.adminKey, makerKeys: [])
        else { return }
        throw CommandError(
            "\(path) is not signed by this cluster's admin key (\(Hex.string(certificate.adminKey).prefix(16))…)")
    }

    /// The key a checkpoint made here is signed with: the admin's in a
    /// cluster with one, else this replica's identity key.
    private static func signingKey(_ directory: DataDirectory, log: EventLog, adminKeyFile: String?) throws
        -> (SigningKey, SignedCheckpoint.Signer)
    {
        guard let certificate = try directory.certificate() else {
            guard adminKeyFile == nil else {
                throw CommandError(
                    "--admin-key: this replica has no certificate (an open cluster), so it signs its checkpoint "
                        + "with its own identity key; run without --admin-key")
            }
            return (try directory.identityKey(), .maker)
        }
        guard let adminKeyFile else {
            throw CommandError(
                "this replica's cluster has an admin key (\(Hex.string(certificate.adminKey).prefix(16))…), and "
                    + "only that admin signs checkpoints: add --admin-key FILE with its key")
        }
        return (try adminKey(fromFile: adminKeyFile, signing: certificate), .admin)
    }
}

/// A checkpoint as `peerd checkpoint show --json` and `/status` report it.
struct CheckpointReport: Codable, Equatable {
    /// 64 hex digits: the SHA-256 of its content.
    var id: String
    var previous: String?
    var made_by: String
    var made_ms: Int64
    /// `admin` or `maker`, and the signing key's hex; absent for an unsigned statement.
    var signer: String?
    var signer_key: String?
    /// How many events it covers (the sum of its cursor).
    var covers_events: UInt64
    var feeds: Int
    var entities: UInt64
    var state_hash: String
    /// False when this replica lacks events it covers: it started from a
    /// checkpoint, moved onto one, or dropped history.
    var history_held: Bool
    /// The checkpoint (id) at or below whose cursor this replica holds no
    /// event, and how many events that cursor covers; absent while it holds every event.
    var history_floor: String?
    var history_floor_events: UInt64?
    var taken_ms: Int64

    init(_ held: HeldCheckpoint) {
        let content = held.content
        id = Hex.string(content.id)
        previous = content.previous.map(Hex.string)
        made_by = content.madeBy
        made_ms = content.madeMs
        let statement = try? SignedCheckpoint(bytes: held.statement)
        signer = statement.map { $0.signer == .admin ? "admin" : "maker" }
        signer_key = statement.map { Hex.string($0.signerKey) }
        covers_events = content.cursor.eventCount
        feeds = content.cursor.heads.count
        entities = content.entityCount
        state_hash = Hex.string(content.stateHash)
        history_held = held.historyHeld
        history_floor = held.floor.map { Hex.string($0.id) }
        history_floor_events = held.floor?.cursor.eventCount
        taken_ms = held.takenMs
    }

    var text: String {
        "checkpoint \(id.prefix(16)) made by \(made_by)\(signer.map { ", signed by the \($0)" } ?? ""): covers "
            + "\(covers_events) events of \(feeds) feeds, \(entities) entities, state hash \(state_hash.prefix(16)); "
            + historyText
    }

    private var historyText: String {
        guard let floor = history_floor else { return "the events it covers are held" }
        if floor == id { return "this replica holds none of the events it covers" }
        return "this replica holds the events it covers after checkpoint \(floor.prefix(16)), none of the "
            + "\(history_floor_events ?? 0) that one covers"
    }

    var json: String { CanonicalJSON.text(of: self) }
}
