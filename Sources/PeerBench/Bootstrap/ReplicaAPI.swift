import DaemonClient
import Foundation
import NetworkLab

#if canImport(Glibc)
    import Glibc
#endif

/// A daemon's HTTP API as `peerd-bench bootstrap` reaches it: on this
/// machine's 127.0.0.1, or on 127.0.0.1 inside a netlab host, whose network
/// namespace the calling thread enters for the length of each request. The
/// bench thus polls a lab host's daemon without a byte on the shaped link.
struct ReplicaAPI: Sendable {
    let endpoint: DaemonEndpoint
    /// The network namespace (`/run/netns/NAME`) the API lives in; nil for this machine's own.
    let namespace: String?

    /// One request that gives up when no answer came for `seconds`.
    func send(_ method: String, _ path: String, body: String? = nil, seconds: Double = 10) throws -> HTTPReply {
        try NetworkNamespace.within(namespace) { try endpoint.send(method, path, body: body, seconds: seconds) }
    }

    /// `GET /status` as a JSON object.
    func status(seconds: Double = 10) throws -> ReplicaSnapshot {
        let reply = try send("GET", "/status", seconds: seconds)
        guard reply.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        else { throw ProbeError.malformed("GET /status: \(reply.statusLine)") }
        return ReplicaSnapshot(object)
    }

    /// How many items `GET /items` lists (not deleted), counted in the body
    /// without decoding it: each item is one object with one `"id":` key.
    func itemCount(seconds: Double = 30) throws -> Int {
        let reply = try send("GET", "/items", seconds: seconds)
        guard reply.status == 200 else { throw ProbeError.malformed("GET /items: \(reply.statusLine)") }
        return Self.occurrences(of: Array(#""id":"#.utf8), in: reply.body)
    }

    /// The ids of the items `GET /items` lists.
    func itemIDs() throws -> [String] {
        let reply = try send("GET", "/items", seconds: 60)
        guard reply.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any],
            let items = object["items"] as? [[String: Any]]
        else { throw ProbeError.malformed("GET /items: \(reply.statusLine)") }
        return items.compactMap { $0["id"] as? String }
    }

    /// The value of the counter `name` in `GET /metrics`.
    func metric(_ name: String) throws -> Double {
        try NetworkNamespace.within(namespace) { try endpoint.metric(name) }
    }

    private static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard let first = needle.first, haystack.count >= needle.count else { return 0 }
        var count = 0
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                count += 1
                index += needle.count
            } else {
                index += 1
            }
        }
        return count
    }
}

/// The parts of one `GET /status` answer that say whether a replica is ready.
struct ReplicaSnapshot: Sendable {
    var stateHash = ""
    var eventCount = 0
    var peersInSync = 0
    var peersConnected = 0
    var eventsMissing = 0
    /// `checkpoint.id`, nil without a checkpoint.
    var checkpoint: String?
    /// `checkpoint.history_held`.
    var historyHeld: Bool?

    init(_ object: [String: Any]) {
        stateHash = object["state_hash"] as? String ?? ""
        eventCount = object["event_count"] as? Int ?? 0
        let sync = object["sync"] as? [String: Any] ?? [:]
        peersInSync = sync["peers_in_sync"] as? Int ?? 0
        peersConnected = sync["peers_connected"] as? Int ?? 0
        eventsMissing = sync["events_missing"] as? Int ?? -1
        let held = object["checkpoint"] as? [String: Any]
        checkpoint = held?["id"] as? String
        historyHeld = held?["history_held"] as? Bool
    }

    /// What `peerd wait --converged-with 1` waits for: a peer in sync, nothing missing.
    var isConverged: Bool { peersInSync >= 1 && eventsMissing == 0 }
}

/// Entering a netlab host's network namespace on the calling thread.
enum NetworkNamespace {
    private typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
    /// `setns(2)`, looked up in the C library at run time: Swift's Glibc
    /// module declares it only under `_GNU_SOURCE`.
    private static let setNamespace: SetNamespace? = dlsym(nil, "setns").map {
        unsafeBitCast($0, to: SetNamespace.self)
    }
    /// `CLONE_NEWNET`.
    private static let networkType: Int32 = 0x4000_0000

    /// Runs `body` with the calling thread in network namespace `name`
    /// (nil: where it is), then moves the thread back. Sockets `body` opens
    /// stay in that namespace; `body` must not suspend.
    static func within<T>(_ name: String?, _ body: () throws -> T) throws -> T {
        guard let name else { return try body() }
        guard let setNamespace else { throw LabFailure("setns(2) is not in this C library") }
        let own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        guard own >= 0 else { throw LabFailure("cannot open /proc/thread-self/ns/net: errno \(errno)") }
        defer { close(own) }
        let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        guard target >= 0 else { throw LabFailure("cannot open /run/netns/\(name): errno \(errno)") }
        defer { close(target) }
        guard setNamespace(target, networkType) == 0 else {
            throw LabFailure("setns into \(name): errno \(errno) (needs root)")
        }
        defer {
            // A thread left in a lab host would send the bench's later traffic there.
            if setNamespace(own, networkType) != 0 { fatalError("setns back from \(name): errno \(errno)") }
        }
        return try body()
    }
}
