/// One row of `peerd peers --json`.
struct LabPeer: Decodable, Sendable {
    var source: String
    var address: String?
    var replica_id: String?
    var role: String?
    var state: String
    var events_to_receive: UInt64
    var events_to_send: UInt64
}
