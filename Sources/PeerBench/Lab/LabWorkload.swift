import Foundation

/// What the lab's existing replica holds: events of a feed of its own, written as an export file
/// (docs/events.md) for `peerd import`.
enum LabWorkload {
    /// Writes `count` Created events of one new feed to `path`; returns `path`.
    static func export(_ count: Int, of replicaID: String, to path: String) throws -> String {
        var text = ""
        for seq in 1...count {
            text +=
                #"{"replica_event_id":"\#(UUID().uuidString.lowercased())","replica_id":"\#(replicaID)","#
                + #""scope":"default","replica_write_offset":\#(seq),"replica_time_ms":\#(1_700_000_000_000 + seq),"#
                + #""entity_type":"item","entity_id":"\#(UUID().uuidString.lowercased())","#
                + #""payload":{"name":"Bulk item \#(seq)","quantity":\#(seq),"type":"Created"},"#
                + #""server_offset":null,"server_time_ms":null}"# + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
