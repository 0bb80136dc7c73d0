import Foundation
import Gossip

/// `DIR/peers.json`: the running daemon's peer table, rewritten every
/// second (written beside it, then renamed into place), so that `peerd
/// peers` can show it from another process.
struct PeersFile: Codable {
    struct Peer: Codable {
        var source: String
        var address: String?
        var replica_id: String?
        var role: String?
        var state: String
        var next_dial_in_ms: Int64?
        var last_error: String?
        var last_sync_ms: Int64?
        var events_to_receive: UInt64
        var events_to_send: UInt64
    }

    /// Wall-clock time of the snapshot, in ms since 1970.
    var updated_ms: Int64
    var replica_id: String
    var peers: [Peer]

    /// A snapshot older than this means no daemon keeps the file current.
    static let staleAfterMs: Int64 = 5_000

    init(replicaID: String, rows: [PeerRow], nowMs: Int64) {
        updated_ms = nowMs
        replica_id = replicaID
        peers = rows.map { row in
            Peer(
                source: row.source, address: row.address?.description, replica_id: row.replicaID, role: row.role,
                state: row.state.rawValue, next_dial_in_ms: row.nextDialInMs, last_error: row.lastError,
                last_sync_ms: row.lastSyncAgoMs.map { nowMs - $0 }, events_to_receive: row.eventsToReceive,
                events_to_send: row.eventsToSend)
        }
    }

    static func path(in directory: DataDirectory) -> String {
        (directory.path as NSString).appendingPathComponent("peers.json")
    }

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let partial = path + ".partial"
        try encoder.encode(self).write(to: URL(fileURLWithPath: partial))
        guard rename(partial, path) == 0 else { throw CommandError("cannot replace \(path): errno \(errno)") }
    }

    static func read(from directory: DataDirectory, nowMs: Int64) throws -> PeersFile {
        let path = path(in: directory)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandError(
                "no daemon is running on \(directory.path); peers are known only while `peerd run` runs")
        }
        let file: PeersFile
        do {
            file = try JSONDecoder().decode(PeersFile.self, from: data)
        } catch {
            throw CommandError("\(path) is damaged (\(error.localizedDescription)); it is rewritten by `peerd run`")
        }
        guard nowMs - file.updated_ms <= staleAfterMs else {
            throw CommandError(
                "no daemon is running on \(directory.path) (its peer list is \((nowMs - file.updated_ms) / 1000) s old)"
            )
        }
        return file
    }
}

/// `peerd peers`: the running daemon's peers.
enum PeersCommand {
    static let command = Command(
        path: ["peers"], usage: "peers [--json]",
        summary: """
            Lists the peers the daemon running on DIR knows: how each was found (configured, discovered, \
            exchanged, inbound), its address, role, connection state, when the two replicas were last in \
            sync, and how many events each side still misses (from their cursors).
            """,
        flags: ["json"]
    ) { arguments, directory in
        _ = try arguments.positional()
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let file = try PeersFile.read(from: directory, nowMs: nowMs)
        if arguments.has("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(file.peers), as: UTF8.self))
            return
        }
        let rows = file.peers.map { peer in
            [
                peer.source, peer.address ?? "-", peer.replica_id.map { String($0.prefix(8)) } ?? "-",
                peer.role ?? "-", describeState(peer),
                peer.last_sync_ms.map { "\((nowMs - $0) / 1000) s ago" } ?? "never",
                "\(peer.events_to_receive)", "\(peer.events_to_send)",
            ]
        }
        printTable(
            header: ["SOURCE", "ADDRESS", "REPLICA", "ROLE", "STATE", "LAST SYNC", "TO RECEIVE", "TO SEND"],
            rows: rows)
    }

    private static func describeState(_ peer: PeersFile.Peer) -> String {
        guard peer.state == "waiting", let next = peer.next_dial_in_ms else { return peer.state }
        return "retry in \((next + 999) / 1000) s"
    }
}
