import Foundation
import LabReport
import Synchronization

/// A write on its way: what its reply is recorded with.
struct SentWrite: Sendable {
    var reportIndex: Int
    var kind: LabPlan.Write.Kind
    var slot: Int
    var node: String
    /// For a retry: the report index of the write it repeats.
    var original: Int?
}

/// The replies of the writes in flight, handed from their tasks to the timeline, which records them.
final class WriteInbox: Sendable {
    private let replies = Mutex<[(SentWrite, NodeAPI.Reply)]>([])

    func put(_ write: SentWrite, _ reply: NodeAPI.Reply) { replies.withLock { $0.append((write, reply)) } }

    /// Every reply that came since the last call.
    func take() -> [(SentWrite, NodeAPI.Reply)] {
        replies.withLock { replies in
            defer { replies = [] }; return replies
        }
    }
}

/// The workload: each planned write as an HTTP request to its node, sent without waiting for the ones before
/// (a stopped node's requests wait for their timeout), recorded for the timeline and the checks.
extension LabRun {
    /// Sends plan write `index` in a task of `group`; its reply lands in ``inbox``.
    func send(_ index: Int, in group: inout DiscardingTaskGroup) {
        let write = plan.writes[index]
        var host = host(ofPeer: write.node)
        let key = "lab-\(configuration.seed)-\(index)"
        var path: String
        var body: String?
        var requestKey: String? = key
        var timeoutSeconds = 1.0
        var original: Int?
        switch write.kind {
        case .create:
            path = "/items"
            body = #"{"name":"Item \#(write.slot)","quantity":\#(write.value)}"#
        case .retry:
            guard let request = requests[Int(write.value)] else { return }
            (host, path, body, requestKey) = (request.host, request.path, request.body, request.key)
            original = request.reportIndex
        case .claim, .takeover, .release:
            guard let item = itemIDs[write.slot] else { return }
            // With a relay the claim waits for its grant (docs/sessions.md); no Idempotency-Key: a claim of an
            // item its node holds already answers with the standing claim.
            path = "/entities/item/\(item)/\(write.kind == .release ? "release" : "claim")"
            body =
                switch write.kind {
                case .takeover: #"{"takeover":true,"wait_ms":1000}"#
                case .claim: #"{"wait_ms":1000}"#
                default: "{}"
                }
            requestKey = nil
            timeoutSeconds = 2.5
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
                body = ""
            }
        }
        let reportIndex = writes.count
        writes.append(
            LabReport.Write(
                node: name(of: host), atMs: nowMs, kind: write.kind.rawValue,
                item: itemIDs[write.slot] ?? "slot \(write.slot)", acknowledged: false))
        if write.kind != .retry, let requestKey { requests[index] = (host, path, body, requestKey, reportIndex) }
        let sent = SentWrite(
            reportIndex: reportIndex, kind: write.kind, slot: write.slot, node: name(of: host), original: original)
        let (api, inbox, requestPath, requestBody) = (NodeAPI(lab: lab, host: host), inbox, path, body)
        let idempotencyKey = requestKey
        group.addTask {
            let reply = try? await api.request(
                "POST", requestPath, body: requestBody, idempotencyKey: idempotencyKey, timeoutSeconds: timeoutSeconds)
            inbox.put(sent, reply ?? NodeAPI.Reply(status: 0, body: ""))
        }
    }

    /// Records the replies that came in: acknowledged writes with their event ids, the ids of created items.
    func recordReplies() {
        for (sent, reply) in inbox.take() {
            let event = reply.succeeded ? reply.object : nil
            if sent.kind == .create, let entity = event?["entity_id"] as? String { itemIDs[sent.slot] = entity }
            let item = itemIDs[sent.slot] ?? "slot \(sent.slot)"
            writes[sent.reportIndex].item = item
            writes[sent.reportIndex].acknowledged = event != nil
            writes[sent.reportIndex].refusal = event == nil ? reply.errorCode : nil
            // A claim answers with the claim's event (`claim`), every other write with its event.
            guard let eventID = ((event?["replica_event_id"] ?? event?["claim"]) as? String)?.lowercased() else {
                continue
            }
            acknowledged[sent.reportIndex] = AcknowledgedWrite(
                index: sent.reportIndex, node: sent.node, kind: sent.kind.rawValue, item: item, eventID: eventID)
            if let original = sent.original { retries.append((sent.reportIndex, original)) }
        }
    }
}
