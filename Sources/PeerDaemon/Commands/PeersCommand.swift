import DaemonClient
import Foundation
import Replica
import SyncProtocol

/// `peerd peers`: the running daemon's peers.
enum PeersCommand {
    static let command = Command(
        path: ["peers"], usage: "peers [--json]",
        summary: """
            Lists the peers the daemon running on DIR knows: how each was found (configured, discovered, \
            exchanged, inbound), its address, role (peer or relay), connection state, when the two replicas \
            were last in sync, how many events each side still misses (from their cursors), and a connected \
            peer's identity key (its first 12 hex digits) with its certificate's read and write scopes and \
            expiry. The first \
            line says the topology (hub or mesh) and the --topology mode it follows; --json prints the \
            peers only.
            """,
        flags: ["json"]
    ) { arguments, directory in
        _ = try arguments.positional()
        guard let daemon = DaemonInfo.running(in: directory) else {
            throw CommandError("no daemon is running on \(directory.path); peers are known only while `peerd run` runs")
        }
        guard let api = try daemon.endpoint() else {
            throw CommandError(
                "the daemon on \(directory.path) runs with --http off; its peers show only through the HTTP API")
        }
        let reply = try api.call("GET", "/peers")
        let file = try JSONDecoder().decode(PeerList.self, from: Data(reply.utf8))
        let nowMs = WallClock.system.nowMs()
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
                "\(peer.events_to_receive)", "\(peer.events_to_send)", shortHash(peer.state_hash),
            ] + identityColumns(peer.identity)
        }
        var heading = Output()
        heading.line("topology \(file.topology) (--topology \(file.topology_mode))")
        heading.flush()
        printTable(
            header: [
                "SOURCE", "ADDRESS", "REPLICA", "ROLE", "STATE", "LAST SYNC", "TO RECEIVE", "TO SEND", "STATE HASH",
                "KEY", "READ", "WRITE", "EXPIRES",
            ],
            rows: rows)
    }

    /// KEY, READ, WRITE, EXPIRES: `-` where the peer showed nothing.
    private static func identityColumns(_ identity: IdentityReport?) -> [String] {
        guard let identity else { return ["-", "-", "-", "-"] }
        guard let certificate = identity.certificate else { return [shortHash(identity.public_key), "-", "-", "-"] }
        return [
            shortHash(identity.public_key), IdentityReport.list(certificate.read_scopes),
            IdentityReport.list(certificate.write_scopes),
            certificate.expires_ms.map { IdentityError.time($0) } ?? "never",
        ]
    }

    private static func shortHash(_ hash: String?) -> String {
        guard let hash else { return "-" }
        return String(hash.prefix(12))
    }

    private static func describeState(_ peer: PeerList.Peer) -> String {
        if peer.diverged { return "diverged" }
        guard peer.state == "waiting", let next = peer.next_dial_in_ms else { return peer.state }
        return "retry in \((next + 999) / 1000) s"
    }
}
