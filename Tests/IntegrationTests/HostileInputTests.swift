import Foundation
import Glibc
import Replica
import SyncProtocol
import TestSupport
import Testing

/// Bytes no PeerSync node would send, written to a running daemon's listen
/// port over a raw TCP socket. Each must be refused with a logged reason,
/// and the daemon must keep running, keep its data and keep syncing.
@Suite("peerd run: hostile input on the listen port")
struct HostileInputTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// The protocol version the daemon speaks (docs/protocol.md).
    static let daemonVersion: UInt16 = 5
    /// A version no daemon speaks, with digits that cannot be mistaken for it.
    static let wrongVersion: UInt16 = 263

    /// One hostile conversation.
    enum Attack: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case randomGarbage
        case garbageInAFrame
        case truncatedFrame
        case hugeFrameHeader
        case wrongVersion
        case initThenGarbage
        case sealedBeforeHandshake
        case silentConnection

        var testDescription: String { rawValue }

        /// What the daemon's refusal line must say. Before the handshake
        /// is done, a frame may be at most 1,024 bytes (docs/protocol.md).
        var reason: String {
            switch self {
            case .randomGarbage, .initThenGarbage: "bytes exceeds the limit of 1024"
            case .garbageInAFrame: "unknown frame type"
            case .truncatedFrame: "connection closed by peer in the middle of a frame"
            case .silentConnection: "connection closed by peer during the handshake"
            case .hugeFrameHeader: "frame of 104857600 bytes exceeds the limit of 1024"
            case .wrongVersion:
                "incompatible protocol version \(HostileInputTests.wrongVersion); "
                    + "this node speaks \(HostileInputTests.daemonVersion)"
            case .sealedBeforeHandshake: "unexpected sealed frame"
            }
        }

        /// The refusal's kind, as `peersync_connections_refused_total` labels it.
        var kind: String {
            switch self {
            case .randomGarbage, .garbageInAFrame, .hugeFrameHeader, .initThenGarbage: "bad_frame"
            case .truncatedFrame, .silentConnection: "left_early"
            case .wrongVersion, .sealedBeforeHandshake: "handshake_failed"
            }
        }
    }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try Executables.peerd(arguments, data: temp.url(dir))
        try #require(result.status == 0, "peerd \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    /// A frame as it goes on the wire: length (type and body), type, body.
    static func frame(type: UInt8, body: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(body.count + 1).bigEndian, Array.init) + [type] + body
    }

    /// A handshake init: "PSYN", the version, a 32-byte ephemeral key.
    static func handshakeInit(version: UInt16) -> [UInt8] {
        frame(type: 1, body: Array("PSYN".utf8) + withUnsafeBytes(of: version.bigEndian, Array.init) + random(32))
    }

    /// Random bytes whose first byte is not zero: read as a length, they
    /// announce at least 16 MiB, so the refusal is deterministic (a random
    /// first byte is that anyway 255 times in 256).
    static func garbage(_ count: Int) -> [UInt8] {
        var bytes = random(count)
        bytes[0] = UInt8.random(in: 1...255)
        return bytes
    }

    /// Carries out `attack` against 127.0.0.1:`port`; returns what the
    /// daemon sent back before it closed the connection.
    func perform(_ attack: Attack, port: UInt16) throws -> [UInt8] {
        let connection = try RawConnection(port: port)
        switch attack {
        case .randomGarbage:
            connection.send(Self.garbage(4096))
        case .garbageInAFrame:
            // A well-formed length, then a type byte no protocol version defines.
            connection.send(Self.frame(type: UInt8.random(in: 6...255), body: Self.random(200)))
        case .truncatedFrame:
            // An init announcing 39 bytes, cut off after 9.
            connection.send(Array(Self.handshakeInit(version: Self.daemonVersion).prefix(9)))
            connection.closeWrite()
        case .hugeFrameHeader:
            connection.send(withUnsafeBytes(of: UInt32(100 << 20).bigEndian, Array.init) + [5] + Self.random(1000))
        case .wrongVersion:
            connection.send(Self.handshakeInit(version: Self.wrongVersion))
        case .initThenGarbage:
            connection.send(Self.handshakeInit(version: Self.daemonVersion))
            // The daemon answers a well-formed init with its reply (5 + 66 bytes).
            let reply = connection.receive(count: 71)
            #expect(reply.count == 71 && reply[4] == 2, "a handshake reply: \(reply)")
            connection.send(Self.garbage(4096))
        case .sealedBeforeHandshake:
            connection.send(Self.frame(type: 5, body: Self.random(64)))
        case .silentConnection:
            break
        }
        return connection.receiveUntilClosed()
    }

    /// Starts a with one item and b syncing from it; returns both once they agree.
    func startPair() throws -> (a: Daemon, b: Daemon) {
        try ok(["init"], "a")
        try ok(["init", "--join", try ok(["cluster-code"], "a")], "b")
        try ok(["item", "create", "Before", "1"], "a")
        let a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try Convergence.wait([temp.url("a"), temp.url("b")])
        return (a, b)
    }

    /// `peersync_connections_refused_total` of `kind`, from the daemon's metrics.
    func refusals(_ kind: String, _ daemon: Daemon) throws -> Int {
        let reply = try #require(daemon.api).request("GET", "/metrics")
        let prefix = "peersync_connections_refused_total{reason=\"\(kind)\"} "
        let line = try #require(reply.text.split(separator: "\n").first { $0.hasPrefix(prefix) })
        return try #require(Int(line.dropFirst(prefix.count)))
    }

    /// Carries out `attack` on `daemon` and checks that it was refused (the
    /// counter of its kind went up; and, for the first of its kind in the
    /// log's interval, a line saying its reason), that the daemon still runs
    /// and that its data is unchanged.
    ///
    /// - Parameter lastLoggedAgo: how long ago a refusal of this kind was
    ///   last logged, `nil` when never.
    /// - Returns: whether this refusal was logged.
    @discardableResult
    func attackAndCheck(_ attack: Attack, _ daemon: Daemon, lastLoggedAgo: Duration? = nil) throws -> Bool {
        let before = try ReplicaStatus.of(daemon.data)
        let refusalsBefore = daemon.events(.connectionRefused).count
        let countedBefore = try refusals(attack.kind, daemon)

        let answer = try perform(attack, port: daemon.port)

        let counted = try Poll.until(timeout: .seconds(30)) { try refusals(attack.kind, daemon) == countedBefore + 1 }
        #expect(counted, "\(attack): not counted as refused (\(attack.kind))")
        var logged: ArraySlice<LogRecord> { daemon.events(.connectionRefused).dropFirst(refusalsBefore) }
        // The daemon logs a kind once per 10 s and counts the rest (a margin either side).
        if lastLoggedAgo.map({ $0 > .seconds(11) }) ?? true {
            let found = Poll.until(timeout: .seconds(10)) {
                logged.contains { $0["kind"] == attack.kind && $0["reason"]?.contains(attack.reason) == true }
            }
            #expect(found, "\(attack): no refusal saying \"\(attack.reason)\" in the log:\n\(daemon.stderr)")
        } else if lastLoggedAgo! < .seconds(9) {
            #expect(logged.isEmpty, "\(attack): a second refusal of its kind within the interval is only counted")
        }
        #expect(daemon.isRunning, "\(attack): the daemon is still running")
        #expect(try ReplicaStatus.of(daemon.data) == before, "\(attack): the daemon's data is unchanged")
        if attack == .wrongVersion {
            // The answer is one reject frame naming both versions, in clear.
            try #require(answer.count >= 5, "answer: \(answer)")
            let length = answer[0..<4].reduce(0) { $0 << 8 | Int($1) }
            #expect(answer[4] == 4, "a reject frame, not type \(answer[4])")
            #expect(length == answer.count - 4, "exactly one frame")
            let text = String(decoding: answer.dropFirst(5), as: UTF8.self)
            #expect(text.contains("\(Self.wrongVersion)") && text.contains("speaks \(Self.daemonVersion)"), "\(text)")
        }
        return !logged.isEmpty
    }

    /// Creates an item on a and requires it to reach b.
    func checkStillSyncs(_ a: Daemon, _ b: Daemon, name: String) throws {
        let before = try ReplicaStatus.of(a.data)
        let item = try ok(["item", "create", name, "2"], "a")
        let arrived = try Poll.until(timeout: .seconds(30)) { try Peek.item(item, in: b.data) != nil }
        #expect(arrived, "\(name) did not reach b: \(b.stderr)")
        let statuses = try Convergence.wait([a.data, b.data])
        #expect(statuses[0].event_count == before.event_count + 1)
    }

    @Test(
        "hostile bytes are refused with a reason; the daemon keeps running, its data and its sync",
        arguments: Attack.allCases)
    func hostileInput(_ attack: Attack) throws {
        let (a, b) = try startPair()
        try attackAndCheck(attack, a)
        try checkStillSyncs(a, b, name: "After \(attack)")
        let names = try JSONDecoder().decode([Item].self, from: Data(try ok(["items", "--json"], "b").utf8))
        #expect(names.map(\.name) == ["After \(attack)", "Before"])
        #expect(try a.stop() == 0, "a: \(a.stderr)")
        #expect(try b.stop() == 0)
    }

    @Test("every hostile input in turn against one daemon, which syncs after each")
    func hostileInputsInTurn() throws {
        let (a, b) = try startPair()
        var loggedAt: [String: ContinuousClock.Instant] = [:]
        var logged = 0
        for attack in Attack.allCases {
            let before = ContinuousClock.now
            if try attackAndCheck(attack, a, lastLoggedAgo: loggedAt[attack.kind].map { before - $0 }) {
                loggedAt[attack.kind] = before
                logged += 1
            }
            try checkStillSyncs(a, b, name: "After \(attack)")
        }
        #expect(try ReplicaStatus.of(a.data).event_count == 1 + Attack.allCases.count)
        #expect(Set(Attack.allCases.map(\.kind)).count == loggedAt.count, "every kind was logged")
        #expect(a.events(.connectionRefused).count == logged)
        #expect(a.events(.peerIdentified).count == 1, "b's one connection lasted throughout")
        #expect(try a.stop() == 0, "a: \(a.stderr)")
        #expect(try b.stop() == 0)
    }
}
