import Foundation
import LabReport
import Synchronization

/// A write on its way: what its reply is recorded with.
struct SentWrite: Sendable {
    var reportIndex: Int
    var kind: LabPlan.Write.Kind
    var slot: Int
    /// The item it writes to; nil for a `create`, whose reply names it.
    var item: String?
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

/// What the workload's task needs of its run: all of it fixed before the first write.
struct WorkloadPlan: Sendable {
    var writes: [LabPlan.Write]
    var seed: UInt64
    /// Peer host → its network namespace and its node's name.
    var namespaces: [Int: String]
    var names: [Int: String]
    /// When the first daemon started: the plan's times count from it.
    var origin: ContinuousClock.Instant
}

/// The writes sent and acknowledged so far, for the progress line while the workload runs on its own task.
final class WorkloadCounts: Sendable {
    let sent = Atomic<Int>(0)
    let acknowledged = Atomic<Int>(0)
}

/// The workload: each planned write as an HTTP request to its node at its time, on a task of its own beside
/// the faults (a fault that restarts a daemon holds up no write), sent without waiting for the ones before (a
/// stopped node's requests wait for their timeout), recorded for the timeline and the checks.
final class Workload {
    /// What it recorded, for the report and the checks.
    struct Outcome: Sendable {
        var writes: [LabReport.Write]
        var acknowledged: [Int: AcknowledgedWrite]
        var retries: [(retry: Int, original: Int)]
    }

    private let plan: WorkloadPlan
    private let counts: WorkloadCounts
    private let inbox = WriteInbox()
    private var writes: [LabReport.Write] = []
    private var acknowledged: [Int: AcknowledgedWrite] = [:]
    private var retries: [(retry: Int, original: Int)] = []
    /// Write index in the plan → the request it sent, for retries; slot → item id.
    private var requests: [Int: (host: Int, path: String, body: String?, key: String, reportIndex: Int)] = [:]
    private var itemIDs: [Int: String] = [:]

    init(_ plan: WorkloadPlan, counts: WorkloadCounts) {
        self.plan = plan
        self.counts = counts
    }

    private var nowMs: Int64 { (ContinuousClock.now - plan.origin).wholeMilliseconds }

    /// Sends every planned write at its time and returns what was recorded once every reply came.
    func run() async throws -> Outcome {
        let failure = await withDiscardingTaskGroup { group -> (any Error)? in
            do {
                for index in plan.writes.indices {
                    let wait = plan.writes[index].atMs - nowMs
                    if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
                    try Task.checkCancellation()
                    recordReplies()
                    send(index, in: &group)
                }
                return nil
            } catch {
                group.cancelAll()
                return error
            }
        }
        recordReplies()
        if let failure { throw failure }
        return Outcome(writes: writes, acknowledged: acknowledged, retries: retries)
    }

    /// Sends plan write `index` in a task of `group`; its reply lands in ``inbox``.
    private func send(_ index: Int, in group: inout DiscardingTaskGroup) {
        let write = plan.writes[index]
        var host = write.node + 1
        let key = "lab-\(plan.seed)-\(index)"
        var path: String
        var body: String?
        var requestKey: String? = key
        var timeoutSeconds = 1.0
        var original: Int?
        // The item written to, known before the reply for everything but a `create` (and its retries).
        var target: String?
        switch write.kind {
        case .create:
            path = "/items"
            body = #"{"name":"Item \#(write.slot)","quantity":\#(write.value)}"#
        case .retry:
            guard let request = requests[Int(write.value)] else { return }
            (host, path, body, requestKey) = (request.host, request.path, request.body, request.key)
            original = request.reportIndex
            target =
                plan.writes[Int(write.value)].kind == .create ? itemIDs[write.slot] : writes[request.reportIndex].item
        case .claim, .takeover, .release:
            guard let item = item(for: write.slot) else { return }
            target = item
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
            guard let item = item(for: write.slot) else { return }
            target = item
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
                item: target ?? "slot \(write.slot)", acknowledged: false))
        if write.kind != .retry, let requestKey { requests[index] = (host, path, body, requestKey, reportIndex) }
        let sent = SentWrite(
            reportIndex: reportIndex, kind: write.kind, slot: write.slot, item: target, node: name(of: host),
            original: original)
        counts.sent.add(1, ordering: .relaxed)
        let api = NodeAPI(namespace: plan.namespaces[host] ?? "")
        let (inbox, requestPath, requestBody) = (inbox, path, body)
        let idempotencyKey = requestKey
        group.addTask {
            let reply = try? await api.request(
                "POST", requestPath, body: requestBody, idempotencyKey: idempotencyKey, timeoutSeconds: timeoutSeconds)
            inbox.put(sent, reply ?? NodeAPI.Reply(status: 0, body: ""))
        }
    }

    private func name(of host: Int) -> String { plan.names[host] ?? "host \(host)" }

    /// The item of `slot`, or while its `create` was not acknowledged (sent to a killed node, or not answered
    /// yet) that of the nearest slot before it that has one, else of any: the write still goes out.
    private func item(for slot: Int) -> String? {
        if let item = itemIDs[slot] { return item }
        let earlier = itemIDs.keys.filter { $0 < slot }.max() ?? itemIDs.keys.min()
        return earlier.flatMap { itemIDs[$0] }
    }

    /// Records the replies that came in: acknowledged writes with their event ids, the ids of created items.
    private func recordReplies() {
        for (sent, reply) in inbox.take() {
            let event = reply.succeeded ? reply.object : nil
            if sent.kind == .create, let entity = event?["entity_id"] as? String { itemIDs[sent.slot] = entity }
            let item = sent.item ?? itemIDs[sent.slot] ?? "slot \(sent.slot)"
            writes[sent.reportIndex].item = item
            writes[sent.reportIndex].acknowledged = event != nil
            writes[sent.reportIndex].refusal = event == nil ? reply.errorCode : nil
            // A claim answers with the claim's event (`claim`), every other write with its event.
            guard let eventID = ((event?["replica_event_id"] ?? event?["claim"]) as? String)?.lowercased() else {
                continue
            }
            counts.acknowledged.add(1, ordering: .relaxed)
            acknowledged[sent.reportIndex] = AcknowledgedWrite(
                index: sent.reportIndex, node: sent.node, kind: sent.kind.rawValue, item: item, eventID: eventID)
            if let original = sent.original { retries.append((sent.reportIndex, original)) }
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded down.
    var wholeMilliseconds: Int64 { components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000 }
}
