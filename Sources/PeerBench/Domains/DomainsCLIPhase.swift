import Foundation
import Replica

/// The domains benchmark as users run it: real `peerd` processes on the
/// same history, once as `item` and once as `ticket` (Item's declared
/// twin).
struct DomainsCLIPhase {
    let peerd: String
    let workload: ImportWorkload
    let cluster: LoopbackCluster

    /// One entity type's run through the CLI.
    struct Run {
        var importSeconds: Double
        var importPeakMiB: Double
        var refoldSeconds: Double
        var redeclareSeconds: Double?
        var catchUpSeconds: Double
        var receiverPeakMiB: Double
        var stateHash: String
    }

    init(peerd: String, workload: ImportWorkload, workspace: Workspace) throws {
        self.peerd = peerd
        self.workload = workload
        cluster = try LoopbackCluster(phase: "domains", peerd: peerd, workspace: workspace)
    }

    /// A source replica that holds the history, its daemon running.
    struct Prepared {
        var entityType: String
        var run: Run
        var sender: PeerProcess
        var data: String
    }

    /// Imports, refolds and (for a declared type) declares again on a new
    /// replica, then starts its daemon.
    func prepare(entityType: String) throws -> Prepared {
        let source = try cluster.initialize("\(entityType)-source")
        let declared = entityType != Item.entityType
        if declared { try declare(version: 1, on: source, acceptRefold: false) }
        var typed = workload
        typed.origin = try EventLog.open(at: (source as NSString).appendingPathComponent("replica.db")).replicaID
        typed.entityType = entityType
        let file = cluster.logPath("\(entityType).ndjson")
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try typed.writeNDJSON(to: file)

        let imported = try timed(["import", file, "--data", source], name: "\(entityType)-import")
        guard imported.stdout.contains("imported \(workload.events) new events") else {
            throw BenchmarkFailure(description: "peerd import of \(entityType): \(imported.stdout)")
        }
        let refold = try timed(["check", "--refold", "--data", source], name: "\(entityType)-check")
        let redeclare = try declared ? declare(version: 2, on: source, acceptRefold: true) : nil

        let sender = try cluster.start("\(entityType)-sender", data: source)
        return Prepared(
            entityType: entityType,
            run: Run(
                importSeconds: imported.seconds, importPeakMiB: imported.peakMiB, refoldSeconds: refold.seconds,
                redeclareSeconds: redeclare, catchUpSeconds: .nan, receiverPeakMiB: .nan, stateHash: ""),
            sender: sender, data: source)
    }

    /// A fresh replica of the source's cluster dialing its daemon, timed
    /// from its start until `peerd wait --converged-with 1` returns.
    func catchUp(_ prepared: Prepared) throws -> Run {
        let (entityType, sender, source) = (prepared.entityType, prepared.sender, prepared.data)
        let receiverData = try cluster.initialize("\(entityType)-receiver", joining: source)
        let start = ContinuousClock.now
        let receiver = try cluster.start("\(entityType)-receiver", data: receiverData, peers: [sender])
        var peak = 0.0
        try LoggedChild.timed(
            name: "peerd wait (\(entityType))", peerd,
            ["wait", "--converged-with", "1", "--timeout", "900", "--data", receiverData],
            logPath: cluster.logPath("\(entityType)-wait")
        ) {
            let sample = receiver.daemon.sample()
            if sample.peakMiB.isFinite { peak = max(peak, sample.peakMiB) }
        }
        let catchUp = (ContinuousClock.now - start).seconds
        let status = try LoggedChild.run(peerd, ["status", "--json", "--data", receiverData])
        var run = prepared.run
        run.stateHash = (try? JSONValue.parse(status))?["state_hash"]?.stringValue ?? "?"
        run.catchUpSeconds = catchUp
        run.receiverPeakMiB = peak
        return run
    }

    func stopAll() { cluster.stopAll() }

    /// `peerd ARGUMENTS` to completion: wall seconds from start to exit,
    /// its peak RSS (sampled every 20 ms) and its standard output.
    private func timed(_ arguments: [String], name: String) throws -> (
        seconds: Double, peakMiB: Double, stdout: String
    ) {
        let run = try LoggedChild.timed(name: "peerd \(name)", peerd, arguments, logPath: cluster.logPath(name))
        return (run.seconds, run.last.peakMiB, run.stdout)
    }

    /// `peerd domain declare` of the twin at `version`; its wall seconds.
    @discardableResult
    private func declare(version: Int64, on data: String, acceptRefold: Bool) throws -> Double {
        let file = cluster.logPath("ticket-v\(version).json")
        try DomainsBenchmark.twin(version: version).write(toFile: file, atomically: true, encoding: .utf8)
        let arguments = ["domain", "declare", file, "--data", data] + (acceptRefold ? ["--accept-refold"] : [])
        return try timed(arguments, name: "declare-v\(version)").seconds
    }
}
