import Foundation
import Replica
import SyncProtocol
import TestSupport
import Testing

/// A real writer process is killed with SIGKILL mid-append; the reopened
/// database must hold every acknowledged append and agree with itself.
@Suite("crash safety")
struct CrashSafetyTests {
    /// Lines `acked SEQ EVENT_ID` that a writer printed after each commit.
    struct Ack: Hashable {
        var seq: UInt64
        var eventID: String
    }

    @Test("kill -9 mid-append loses no acknowledged event and leaves cursor, events and projections in agreement")
    func killNineDuringAppends() throws {
        let temp = try TemporaryDirectory()
        let file = temp.url("replica.db").path
        var acked: [Ack] = []
        for round in 0..<3 {
            let target = 40 + round * 70
            acked += try runWriterAndKill(file: file, afterAcks: target)
            try verify(file: file, acked: acked)
        }
    }

    /// Starts the writer, waits for `afterAcks` acknowledgements, kills it
    /// with SIGKILL, and returns every acknowledgement it printed.
    private func runWriterAndKill(file: String, afterAcks: Int) throws -> [Ack] {
        let process = Process()
        process.executableURL = Executables.url("peerd-bench")
        process.arguments = ["crash-writer", "--data", file, "--count", "1000000"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        var killed = false
        while true {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if !killed, text.split(separator: "\n").count >= afterAcks {
                kill(process.processIdentifier, SIGKILL)
                killed = true
            }
        }
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the writer must die by the signal, not finish")
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "acked", let seq = UInt64(parts[1]) else { return nil }
            return Ack(seq: seq, eventID: String(parts[2]))
        }
    }

    private func verify(file: String, acked: [Ack]) throws {
        let log = try EventLog.open(at: file)
        let feed = FeedID(replicaID: log.replicaID)
        let head = try log.cursor()[feed]
        let lastAcked = try #require(acked.last).seq
        // Every acknowledged append is there; at most one more committed
        // between its commit and the kill.
        #expect(head >= lastAcked && head <= lastAcked + 1, "head \(head), last acked \(lastAcked)")
        // Acks rise by one within a run; between runs one seq may be missing:
        // the append that committed after its run's last ack was printed.
        for (earlier, later) in zip(acked, acked.dropFirst()) {
            #expect(
                later.seq == earlier.seq + 1 || later.seq == earlier.seq + 2, "acks \(earlier.seq) then \(later.seq)")
        }
        let stored = try log.events(in: feed, seqs: 1...head, limit: Int(head))
        #expect(stored.count == Int(head))
        let storedIDs = Dictionary(
            uniqueKeysWithValues: stored.map { ($0.event.seq, $0.event.eventID.uuidString.lowercased()) })
        for ack in acked { #expect(storedIDs[ack.seq] == ack.eventID, "acked seq \(ack.seq) is held unchanged") }
        #expect(try log.eventCount() == Int64(head))
        // Each append created one item: projections agree with the events.
        #expect(try log.projections(Item.self).count == Int(head))
        // And with a refold from scratch of the same events.
        let fresh = try EventLog.create(
            at: file + ".refold-\(head)", replicaID: "verifier")
        try fresh.ingest(stored.map(\.event))
        #expect(try fresh.stateHash() == log.stateHash())
    }
}
