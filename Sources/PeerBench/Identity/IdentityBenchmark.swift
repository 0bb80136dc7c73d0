import CSodium
import Foundation
import Replica
import SyncProtocol

/// `peerd-bench identity`: what identities and signed feeds cost, beside a
/// bare SQLite insert of the same run (docs/performance.md, "Today's figures").
struct IdentityBenchmark {
    var events = 200_000
    var signatures = 5_000
    var directory: String?

    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        var random = SplitMix64(seed: 0x1D_E471)
        var rows: [RawRow] = []
        rows.reserveCapacity(events)
        for index in 0..<events {
            let payload = "{\"quantity\":\(index % 97),\"type\":\"QuantityChanged\"}"
            let row = RawRow(
                feed: 1, seq: Int64(index + 1), eventID: random.uuidBytes(), timeMs: 1_796_000_000_000 + Int64(index),
                entity: Int64(index % 1_000 + 1), entityID: "item-\(index % 1_000)", payload: payload,
                arrivalMs: 1_796_000_000_000)
            rows.append(row)
        }
        let batches = stride(from: 0, to: rows.count, by: 10_000).map { Array(rows[$0..<min($0 + 10_000, rows.count)]) }
        let insertSeconds = try RawEventTable.insertSeconds(batches, workspace: workspace, name: "identity-raw.db")
        let bareMicros = insertSeconds / Double(events) * 1e6

        let chained = rows.map { row in
            Event(
                eventID: row.eventID.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) },
                feed: FeedID(replicaID: "replica-0001"), seq: UInt64(row.seq),
                timeMs: row.timeMs, entityType: "item", entityID: row.entityID, payload: row.payload)
        }
        var link = FeedChain.genesis
        var hashing = Stopwatch()
        hashing.measure { for event in chained { link = FeedChain.link(after: link, event) } }
        let hashMicros = hashing.seconds / Double(events) * 1e6
        let inputs = chained.map(FeedChain.encoding)

        let key = SigningKey.generate()
        let admin = SigningKey.generate()
        let heads = (0..<signatures).map { Array(inputs[$0 % inputs.count].prefix(32)) + link }
        var signed: [[UInt8]] = []
        var signing = Stopwatch()
        signing.measure { signed = heads.map { key.sign($0) } }
        var verifying = Stopwatch()
        var valid = 0
        verifying.measure {
            for (head, signature) in zip(heads, signed) where SigningKey.verify(signature, of: head, by: key.publicKey)
            {
                valid += 1
            }
        }
        guard valid == signatures else { throw UsageError("identity: \(signatures - valid) signatures did not verify") }

        let certificate = Certificate.issue(
            by: admin, for: key.publicKey, replicaID: "replica-0001", read: ["team", "alice"], write: ["alice"],
            issuedMs: 0, expiresMs: nil)
        let trust = TrustPolicy(adminKey: admin.publicKey, wallClockMs: { 1 })
        let transcript = [UInt8](repeating: 9, count: 32)
        let hello = PeerIdentity.proving(key, certificate: certificate, binding: transcript, role: .initiator)
        let admissions = max(1, signatures / 5)
        var admitting = Stopwatch()
        try admitting.measure {
            for _ in 0..<admissions {
                // What a receiver does with a hello: read the certificate (its signature), then admit.
                let read = PeerIdentity(
                    publicKey: hello.publicKey, proof: hello.proof,
                    certificate: try Certificate(bytes: certificate.bytes))
                _ = try trust.admit(read, replicaID: "replica-0001", binding: transcript, role: .initiator)
            }
        }

        let signMicros = signing.seconds / Double(signatures) * 1e6
        let verifyMicros = verifying.seconds / Double(signatures) * 1e6
        let admitMicros = admitting.seconds / Double(admissions) * 1e6
        var table = MarkdownTable([
            "operation", "µs each", "vs one bare insert (\(Figure.fixed(bareMicros, 2)) µs/row)",
        ])
        for (name, micros) in [
            ("bare SQLite insert, batches of 10,000 (baseline, \(events) rows)", bareMicros),
            ("FeedChain.link: BLAKE2b-256 over an event (\(inputs[0].count + 48) bytes)", hashMicros),
            ("Ed25519 sign", signMicros), ("Ed25519 verify", verifyMicros),
            ("admit a hello: read its certificate, check proof and certificate", admitMicros),
        ] {
            table.row(name, Figure.fixed(micros, 2), Figure.fixed(micros / bareMicros, 2) + "×")
        }
        print((["# peerd-bench identity", ""] + table.lines + [""]).joined(separator: "\n"))
        print(
            String(
                format: "bare insert %.0f rows/s; a verify per event would cap a receiver at %.0f events/s, "
                    + "a chain link per event at %.0f", 1e6 / bareMicros, 1e6 / verifyMicros, 1e6 / hashMicros))
        let ingest = try VerifiedIngestPhase(events: min(events, 100_000), pageEvents: 5_000, workspace: workspace)
            .run()
        print("")
        print(
            String(
                format: "catch-up ingest of %d signed events in pages of 5,000: verified %.0f events/s, "
                    + "unverified %.0f events/s: %.2f× (target ≥ 0.9×)", min(events, 100_000), ingest.verifiedPerSecond,
                ingest.unverifiedPerSecond, ingest.ratio))
    }
}
