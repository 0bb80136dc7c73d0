import Foundation
import Replica

/// `peerd-bench domains`: a declared domain against the Swift `Item` on
/// the same history (docs/performance.md "Declared domains"). The events
/// are the import benchmark's (20,000 items, 4 origin feeds interleaved);
/// for the declared rows they carry entity type `ticket`, which a log folds
/// with Item's declared twin (`DomainDeclaration.itemTwin`). Times, in the
/// same run: raw SQLite inserting the same rows (the baseline), then for
/// each domain `EventLog.ingest` in catch-up batches and a full refold
/// (`checkIntegrity(refold: true)`), and for the declared one also a new
/// version declared, which refolds every entity in its transaction.
///
/// ```
/// peerd-bench domains [--events N] [--dir DIR]
/// ```
struct DomainsBenchmark {
    var events = 200_000
    var batch = 5_000
    var directory: String?
    var helpRequested = false

    static let usage = """
        usage: peerd-bench domains [--events N] [--dir DIR]

        Ingests N events (default 200000) of 20,000 items in batches of 5000, folded by the Swift Item
        domain and by its declared twin, and refolds every entity of each; prints events/s, the ratio of
        the declared domain to the Swift one, and raw SQLite inserting the same rows as the baseline.

          --dir DIR   work directory (default: a temporary one, removed)
        """

    static func parse(_ arguments: [String]) throws -> DomainsBenchmark {
        var benchmark = DomainsBenchmark()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            switch flag {
            case "--events":
                benchmark.events = try BenchOptions.count(BenchOptions.value(after: flag, in: &remaining), for: flag)
            case "--dir": benchmark.directory = try BenchOptions.value(after: flag, in: &remaining)
            case "--help", "-h": benchmark.helpRequested = true
            default: throw UsageError("domains: unknown argument \(flag) (see `peerd-bench domains --help`)")
            }
        }
        return benchmark
    }

    func run() throws {
        if helpRequested { return print(Self.usage) }
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
        let date = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        func rate(_ seconds: Double) -> String { Report.grouped(Double(events) / seconds) }
        print(
            """
            ## peerd-bench domains: \(Report.grouped(Double(events))) events, run \(date)Z

            - machine: \(Report.machine)
            - one process, one log at a time; states of both domains checked equal (\(swift.stateBytes) bytes)

            | what | events/s | seconds | vs Swift Item | vs raw SQLite |
            |---|---:|---:|---:|---:|
            | raw SQLite insert, batches of \(batch) | \(rate(raw)) | \(String(format: "%.2f", raw)) | | 1.00× |
            | ingest, Swift `Item` | \(rate(swift.ingest)) | \(String(format: "%.2f", swift.ingest)) | 1.00× \
            | \(Report.ratio(raw / swift.ingest)) |
            | ingest, declared twin | \(rate(declared.ingest)) | \(String(format: "%.2f", declared.ingest)) \
            | \(Report.ratio(swift.ingest / declared.ingest)) | \(Report.ratio(raw / declared.ingest)) |
            | refold (`peerd check --refold`), Swift `Item` | \(rate(swift.refold)) \
            | \(String(format: "%.2f", swift.refold)) | 1.00× | |
            | refold (`peerd check --refold`), declared twin | \(rate(declared.refold)) \
            | \(String(format: "%.2f", declared.refold)) | \(Report.ratio(swift.refold / declared.refold)) | |
            | refold by declaring version 2 | \(rate(declared.redeclare ?? 1)) \
            | \(String(format: "%.2f", declared.redeclare ?? 0)) \
            | \(Report.ratio(swift.refold / (declared.redeclare ?? 1))) | |
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
        let ingest = try workload.ingest(into: log, batch: batch, entityType: declared ? type : nil)
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
