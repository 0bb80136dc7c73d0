import Foundation
import Replica

/// `peerd-bench domains`: a declared domain against the Swift `Item` on
/// the same history (docs/performance.md "Today's figures").
struct DomainsBenchmark {
    var events = 200_000
    var batch = 5_000
    var peerd: String
    var directory: String?
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        let workload = ImportWorkload(events: events, wallClockMs: SizeBenchmark.wallClockMs())
        progress("peerd-bench domains: \(events) events, work directory \(workspace.path)")
        let raw = try workload.rawInsert(batch: batch, workspace: workspace, name: "domains-raw.db").seconds
        progress("domains: the Swift Item ...")
        let swift = try fold(workload, declared: false, workspace: workspace)
        progress("domains: its declared twin ...")
        let declared = try fold(workload, declared: true, workspace: workspace)
        guard swift.stateBytes == declared.stateBytes else {
            throw BenchmarkFailure(
                description: "the declared twin folded other states than Item (\(declared.stateBytes) bytes of "
                    + "state against \(swift.stateBytes))")
        }
        let phase = try DomainsCLIPhase(peerd: peerd, workload: workload, workspace: workspace)
        defer { phase.stopAll() }
        progress("domains: peerd import, check and declare ...")
        let sources = try [Item.entityType, "ticket"].map { try phase.prepare(entityType: $0) }
        progress("domains: catch-ups ...")
        let cliSwift = try phase.catchUp(sources[0])
        let cliDeclared = try phase.catchUp(sources[1])

        func row(_ what: String, _ seconds: Double, vs swiftSeconds: Double?, peakMiB: Double? = nil) -> String {
            "| \(what) | \(Report.grouped(Double(events) / seconds)) | \(String(format: "%.2f", seconds)) | "
                + "\(swiftSeconds.map { Report.ratio($0 / seconds) } ?? "") | \(Report.ratio(raw / seconds)) | "
                + "\(peakMiB.map { String(format: "%.0f", $0) } ?? "") |"
        }
        let rows = [
            row("raw SQLite insert, batches of \(batch)", raw, vs: nil),
            row("in process: ingest, Swift `Item`", swift.ingest, vs: swift.ingest),
            row("in process: ingest, declared twin", declared.ingest, vs: swift.ingest),
            row("in process: refold (`checkIntegrity(refold:)`), Swift `Item`", swift.refold, vs: swift.refold),
            row("in process: refold, declared twin", declared.refold, vs: swift.refold),
            row("in process: refold by declaring version 2", declared.redeclare ?? .nan, vs: swift.refold),
            row(
                "`peerd import FILE`, items", cliSwift.importSeconds, vs: cliSwift.importSeconds,
                peakMiB: cliSwift.importPeakMiB),
            row(
                "`peerd import FILE`, tickets", cliDeclared.importSeconds, vs: cliSwift.importSeconds,
                peakMiB: cliDeclared.importPeakMiB),
            row("`peerd check --refold`, items", cliSwift.refoldSeconds, vs: cliSwift.refoldSeconds),
            row("`peerd check --refold`, tickets", cliDeclared.refoldSeconds, vs: cliSwift.refoldSeconds),
            row(
                "`peerd domain declare` v2 `--accept-refold`, tickets", cliDeclared.redeclareSeconds ?? .nan,
                vs: cliSwift.refoldSeconds),
            row(
                "catch-up, daemon to fresh daemon, items (3 daemons up)", cliSwift.catchUpSeconds,
                vs: cliSwift.catchUpSeconds,
                peakMiB: cliSwift.receiverPeakMiB),
            row(
                "catch-up, daemon to fresh daemon, tickets (4 daemons up)", cliDeclared.catchUpSeconds,
                vs: cliSwift.catchUpSeconds, peakMiB: cliDeclared.receiverPeakMiB),
        ]
        let date = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        print(
            """
            ## peerd-bench domains: \(Report.grouped(Double(events))) events, run \(date)Z

            - machine: \(Report.machine)
            - in process: one log at a time; states of both domains checked equal (\(swift.stateBytes) bytes)
            - `peerd` rows: child processes on fresh data directories, the history imported as the replica's own \
            feeds; peak RSS of the import process and of the receiving daemon; the catch-up is timed from the \
            receiver's start until `peerd wait --converged-with 1` returns (receiver state hashes: \
            \(cliSwift.stateHash.prefix(12))… items, \(cliDeclared.stateHash.prefix(12))… tickets)

            | what | events/s | seconds | vs Swift Item | vs raw SQLite | peak RSS MiB |
            |---|---:|---:|---:|---:|---:|
            \(rows.joined(separator: "\n"))
            """)
    }

    private struct FoldRun {
        var ingest: Double
        var refold: Double
        var redeclare: Double?
        var stateBytes: Int
    }

    /// Ingest and refold with the Swift Item, or with the twin declared as `ticket`.
    private func fold(_ workload: ImportWorkload, declared: Bool, workspace: Workspace) throws -> FoldRun {
        let path = workspace.freshDatabase(declared ? "domains-declared.db" : "domains-swift.db")
        defer { workspace.remove(path) }
        let log = try EventLog.create(at: path, replicaID: "bench-domains")
        let type = declared ? "ticket" : Item.entityType
        if declared {
            try log.declare(try DeclarationEvent(declarationJSON: try JSONValue.parse(Self.twin(version: 1))))
        }
        var typed = workload
        typed.entityType = type
        let ingest = try typed.ingest(into: log, batch: batch)
        var refold = Stopwatch()
        let report = try refold.measure { try log.checkIntegrity(refold: true) }
        guard report.findings.isEmpty else {
            throw BenchmarkFailure(description: "refold of \(type) found \(report.findings)")
        }
        var redeclare: Double?
        if declared {
            var watch = Stopwatch()
            try watch.measure {
                try log.declare(
                    try DeclarationEvent(declarationJSON: try JSONValue.parse(Self.twin(version: 2))),
                    acceptRefold: true)
            }
            redeclare = watch.seconds
        }
        let bytes = try log.states(entityType: type).reduce(0) { $0 + $1.json.utf8.count }
        return FoldRun(ingest: ingest.seconds, refold: refold.seconds, redeclare: redeclare, stateBytes: bytes)
    }

    static func twin(version: Int64) -> String { DomainDeclaration.itemTwin(entityType: "ticket", version: version) }
}
