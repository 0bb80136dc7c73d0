import Foundation

/// What one `peerd-lab` run did and found: the JSON report
/// (`DIR/lab-report.json`), and what the terminal table and the HTML
/// timeline are drawn from (docs/lab.md). Times are milliseconds since the
/// lab started its first daemon.
public struct LabReport: Codable, Sendable, Equatable {
    /// How the run was asked for.
    public struct Configuration: Codable, Sendable, Equatable {
        public var nodes: Int
        public var relays: Int
        public var durationMs: Int64
        public var seed: UInt64
        /// The fault kinds in the schedule, e.g. `partition`, `loss`, `kill`.
        public var faults: [String]
        /// `--rate`: the writes a second asked for, across all nodes (nil in reports older than the option).
        public var rate: Int?
        /// Fault kinds asked for that the `peerd` the nodes ran cannot make, with why (`clock` with a release
        /// build); the schedule left them out. Nil or empty when there were none.
        public var unavailable: [String: String]?

        public init(
            nodes: Int, relays: Int, durationMs: Int64, seed: UInt64, faults: [String], rate: Int? = nil,
            unavailable: [String: String]? = nil
        ) {
            self.nodes = nodes
            self.relays = relays
            self.durationMs = durationMs
            self.seed = seed
            self.faults = faults
            self.rate = rate
            self.unavailable = unavailable
        }
    }

    /// One node at the end of the run.
    public struct Node: Codable, Sendable, Equatable {
        /// `n1`, `n2`, … (relays `r1`, …).
        public var name: String
        public var host: Int
        /// `peer` or `relay`.
        public var role: String
        public var replicaID: String
        public var events: Int64
        /// The vector cursor, `replica_id/scope` → seq.
        public var cursor: [String: UInt64]
        public var stateHash: String
        /// From the last heal until this node held what every node holds; nil when it never did.
        public var convergedAfterHealMs: Int64?
        public var bytesSent: Int64
        public var bytesReceived: Int64
        public var peakRSSBytes: Int64

        /// The snake-case strategies do not round-trip acronyms (`replicaID` is written `replica_id`, which
        /// reads back as `replicaId`): the keys say `Id` and `Rss` so that both directions meet.
        enum CodingKeys: String, CodingKey {
            case name, host, role, events, cursor, stateHash, convergedAfterHealMs, bytesSent, bytesReceived
            case replicaID = "replicaId"
            case peakRSSBytes = "peakRssBytes"
        }

        public init(
            name: String, host: Int, role: String, replicaID: String, events: Int64, cursor: [String: UInt64],
            stateHash: String, convergedAfterHealMs: Int64?, bytesSent: Int64, bytesReceived: Int64,
            peakRSSBytes: Int64
        ) {
            self.name = name
            self.host = host
            self.role = role
            self.replicaID = replicaID
            self.events = events
            self.cursor = cursor
            self.stateHash = stateHash
            self.convergedAfterHealMs = convergedAfterHealMs
            self.bytesSent = bytesSent
            self.bytesReceived = bytesReceived
            self.peakRSSBytes = peakRSSBytes
        }
    }

    /// One fault of the schedule, as a band on the timeline.
    public struct Fault: Codable, Sendable, Equatable {
        /// `partition`, `loss`, `rate`, `delay`, `kill`, `stop`, `avahi`, `clock`, `restore`.
        public var kind: String
        public var startMs: Int64
        /// When it was healed; equal to `startMs` for an instant fault (a kill -9 and restart counts its downtime).
        public var endMs: Int64
        /// The nodes it hit.
        public var nodes: [String]
        /// One line for people, e.g. `n1 n2 | n3 n4 n5`.
        public var description: String

        public init(kind: String, startMs: Int64, endMs: Int64, nodes: [String], description: String) {
            self.kind = kind
            self.startMs = startMs
            self.endMs = endMs
            self.nodes = nodes
            self.description = description
        }
    }

    /// One write of the workload, as a tick on the timeline.
    public struct Write: Codable, Sendable, Equatable {
        public var node: String
        public var atMs: Int64
        /// `create`, `rename`, `quantity`, `note`, `delete`, `undo`, `retry`, `claim`, `takeover`, `release`.
        public var kind: String
        public var item: String
        /// The API answered 2xx (the write must then be on every node).
        public var acknowledged: Bool
        /// Why a write was not acknowledged: the API's error code (`entity_held`, `taken_over`, `deleted`, …), or
        /// `no_answer` (a killed or stopped node); nil when it was acknowledged or in reports older than the field.
        public var refusal: String?

        public init(
            node: String, atMs: Int64, kind: String, item: String, acknowledged: Bool, refusal: String? = nil
        ) {
            self.node = node
            self.atMs = atMs
            self.kind = kind
            self.item = item
            self.acknowledged = acknowledged
            self.refusal = refusal
        }
    }

    /// How many events a node held at one moment (a point of its timeline line).
    public struct Sample: Codable, Sendable, Equatable {
        public var node: String
        public var atMs: Int64
        public var events: Int64

        public init(node: String, atMs: Int64, events: Int64) {
            self.node = node
            self.atMs = atMs
            self.events = events
        }
    }

    /// One check after the last heal.
    public struct Check: Codable, Sendable, Equatable {
        public var name: String
        public var passed: Bool
        /// For a failed check: the nodes, events and items involved, one line each.
        public var details: [String]

        public init(name: String, passed: Bool, details: [String]) {
            self.name = name
            self.passed = passed
            self.details = details
        }
    }

    public var configuration: Configuration
    /// Wall-clock time (ms since 1970) the run started.
    public var startedAtMs: Int64
    /// Length of the run from the first daemon to the last check.
    public var elapsedMs: Int64
    /// When the last fault was healed.
    public var lastHealMs: Int64
    /// When every node held the same events and state hash after the last heal; nil if never.
    public var convergedAtMs: Int64?
    public var nodes: [Node]
    public var faults: [Fault]
    public var writes: [Write]
    public var samples: [Sample]
    public var checks: [Check]
    /// The conflicts the workload made (nil in reports older than the count).
    public var conflicts: Conflicts?

    /// True when every check passed: `peerd-lab` exits 0 only then.
    public var passed: Bool { !checks.isEmpty && checks.allSatisfy(\.passed) }

    public init(
        configuration: Configuration, startedAtMs: Int64, elapsedMs: Int64, lastHealMs: Int64, convergedAtMs: Int64?,
        nodes: [Node], faults: [Fault], writes: [Write], samples: [Sample], checks: [Check],
        conflicts: Conflicts? = nil
    ) {
        self.configuration = configuration
        self.startedAtMs = startedAtMs
        self.elapsedMs = elapsedMs
        self.lastHealMs = lastHealMs
        self.convergedAtMs = convergedAtMs
        self.nodes = nodes
        self.faults = faults
        self.writes = writes
        self.samples = samples
        self.checks = checks
        self.conflicts = conflicts
    }

    /// The report as JSON, keys in snake case and sorted, as `lab-report.json` holds it.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(self)
    }

    /// Reads `lab-report.json`.
    public static func decode(_ data: Data) throws -> LabReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(LabReport.self, from: data)
    }
}
