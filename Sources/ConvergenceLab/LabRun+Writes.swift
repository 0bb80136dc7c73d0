import ChildProcesses
import Foundation
import LabReport
import NetworkLab
import Replica

/// The workload: each planned write as an HTTP request to its node, recorded for the timeline and the checks.
extension LabRun {
    func send(_ index: Int) async throws {
        let write = plan.writes[index]
        var host = host(ofPeer: write.node)
        let key = "lab-\(configuration.seed)-\(index)"
        var path: String
        var body: String?
        var requestKey = key
        var original: Int?
        switch write.kind {
        case .create:
            path = "/items"
            body = #"{"name":"Item \#(write.slot)","quantity":\#(write.value)}"#
        case .retry:
            guard let request = requests[Int(write.value)] else { return }
            (host, path, body, requestKey) = (request.host, request.path, request.body, request.key)
            original = request.reportIndex
        default:
            guard let item = itemIDs[write.slot] else { return }
            path = "/items/\(item)/events"
            switch write.kind {
            case .rename: body = #"{"type":"Renamed","name":"Item \#(write.slot) v\#(write.value)"}"#
            case .quantity: body = #"{"type":"QuantityChanged","quantity":\#(write.value)}"#
            case .note: body = #"{"type":"NoteChanged","note":"note \#(write.value)"}"#
            case .delete: body = #"{"type":"Deleted"}"#
            default:
                path = "/items/\(item)/undo"
                body = nil
            }
        }
        let atMs = nowMs
        let reply = try await NodeAPI(lab: lab, host: host).request(
            "POST", path, body: body ?? (write.kind == .undo ? "" : nil), idempotencyKey: requestKey,
            timeoutSeconds: 1)
        let event = reply.succeeded ? reply.object : nil
        if write.kind == .create, let entity = event?["entity_id"] as? String { itemIDs[write.slot] = entity }
        let item = itemIDs[write.slot] ?? "slot \(write.slot)"
        let reportIndex = writes.count
        writes.append(
            LabReport.Write(
                node: name(of: host), atMs: atMs, kind: write.kind.rawValue, item: item, acknowledged: event != nil))
        if write.kind != .retry { requests[index] = (host, path, body, requestKey, reportIndex) }
        if let eventID = (event?["replica_event_id"] as? String)?.lowercased() {
            acknowledged[reportIndex] = AcknowledgedWrite(
                index: reportIndex, node: name(of: host), kind: write.kind.rawValue, item: item, eventID: eventID)
            if let original { retries.append((reportIndex, original)) }
        }
    }
}
