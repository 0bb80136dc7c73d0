import DaemonClient
import Foundation

/// What `GET /peers` answers: the topology and every peer with its role.
struct PeerTable: Decodable {
    struct Peer: Decodable {
        var source: String
        var replica_id: String?
        var role: String?
        var state: String
    }

    var replica_id: String
    var topology: String
    var topology_mode: String
    var peers: [Peer]

    /// Peers with an open connection.
    var connected: [Peer] { peers.filter { $0.state == "connected" } }
    /// Roles of the connected peers, e.g. `["relay"]`.
    var connectedRoles: [String] { connected.map { $0.role ?? "?" }.sorted() }
}

extension Daemon {
    /// `GET /peers`.
    func peerTable() throws -> PeerTable {
        let reply = try api!.request("GET", "/peers")
        return try JSONDecoder().decode(PeerTable.self, from: Data(reply.body))
    }

    /// `POST /items`; returns the new item's id (the `Created` event's `entity_id`).
    @discardableResult
    func createItem(_ name: String, quantity: Int = 1) throws -> String {
        let reply = try api!.request("POST", "/items", body: #"{"name":"\#(name)","quantity":\#(quantity)}"#)
        guard reply.status == 201 else {
            throw DaemonClientError("POST /items answered \(reply.status): \(reply.text)")
        }
        struct Created: Decodable { var entity_id: String }
        return try JSONDecoder().decode(Created.self, from: Data(reply.body)).entity_id
    }

    /// One value of `GET /metrics`, by its sample as printed (e.g.
    /// `peersync_topology{mode="hub"}`).
    func metric(_ sample: String) throws -> Double? {
        let text = try api!.request("GET", "/metrics").text
        for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }
}
