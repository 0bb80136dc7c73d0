import Foundation
import Replica
import SyncProtocol

/// `peerd import FILE [--vouch [--admin-key FILE]]`: NDJSON events through
/// the ingest path sync uses, verified whole first (docs/events.md "Import").
enum ImportCommand {
    static let command = Command(
        path: ["import"], usage: "import FILE [--vouch [--admin-key FILE]]",
        summary: """
            Reads NDJSON events (docs/events.md) through the same ingest path as sync. Idempotent. The whole \
            file is checked first, signatures too: a bad line, a feed whose signed head does not verify, or an \
            incremental export whose base this replica does not hold, is reported with its line number and \
            nothing is imported. --vouch lets in feeds of other replicas that were never signed (history from \
            before signed feeds, or from another system): this replica vouches for them and signs them from \
            then on; in a cluster with an admin key that admin signs the vouch (--admin-key FILE).
            """,
        flags: ["vouch"], options: ["admin-key"]
    ) { arguments, directory in
        let file = try arguments.positional("FILE")[0]
        guard arguments.has("vouch") || arguments.options["admin-key"] == nil else {
            throw UsageError("--admin-key signs a vouch: it goes with --vouch")
        }
        let log = try directory.openLog()
        let identity = try directory.identity(replicaID: log.replicaID)
        let vouching =
            try arguments.has("vouch")
            ? Vouching(replicaID: log.replicaID, identity: identity, adminKeyFile: arguments.options["admin-key"])
            : nil
        try importFile(file, into: log, identity: identity, vouching: vouching)
    }

    /// Events per `ingest` call: one transaction each, and large enough that
    /// the projection rows are written once per many batches (they are
    /// deferred from 256 events and written every 20,000; see
    /// `EventLog.Options.ProjectionWrites`). 10,000 events of ~300 bytes
    /// are a few MB, however long the file.
    static let batchSize = 10_000

    private static func importFile(
        _ path: String, into log: EventLog, identity: (key: SigningKey, certificate: Certificate?),
        vouching: Vouching?
    ) throws {
        // Pass 1: every line must parse and every feed verify, as sync verifies, so nothing is
        // applied from a bad file. Only each feed's running link is kept, so memory does not grow with the file.
        try NDJSONFile.requireRegularFile(path)
        var verification = ImportVerification()
        let eventLines = try NDJSONFile.forEachLine(
            in: path, event: { event, line in verification.take(event, line: line) },
            proof: { proof, line in verification.take(proof, line: line) })
        let plan = try verification.plan(
            for: try ImportVerification.Replica(log: log, identity: identity, vouching: vouching != nil))
        let vouches = vouching?.certificates(for: plan.vouched, nowMs: TrustPolicy.systemClockMs()) ?? []
        // Certificates first: a daemon running on this replica passes them to its peers before the events.
        try log.storeCertificates((plan.certificates + vouches).map { ($0.replicaID, $0.bytes) })

        // Pass 2: a thread parses the file again into batches while this one ingests them, each
        // batch with the signed heads it reaches, in its transaction.
        let batches = BatchHandoff()
        Thread.detachNewThread {
            do {
                var batch: [Event] = []
                batch.reserveCapacity(batchSize)
                try NDJSONFile.forEachLine(in: path) { event, _ in
                    batch.append(event)
                    if batch.count == batchSize {
                        try batches.put(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty { try batches.put(batch) }
                batches.finish(nil)
            } catch {
                batches.finish(error)
            }
        }
        var heads = HeadsToKeep(plan.heads)
        let vouched = plan.vouchedFeeds
        // Counts and problems only: keeping every stored event made memory grow with the file.
        var total = IngestReport()
        var storedCount = 0
        do {
            while let batch = try batches.take() {
                let report = try log.ingest(batch, adopting: heads.reached(by: batch), vouched: vouched)
                storedCount += report.stored.count
                total.duplicates += report.duplicates
                total.forks += report.forks
                total.gaps += report.gaps
                total.invalid += report.invalid
            }
        } catch {
            batches.cancel()
            throw error
        }
        try log.ingest([], adopting: heads.rest)
        try log.writePendingProjections()
        let problems = total.forks.map(\.description) + total.gaps.map(\.description) + total.invalid.map(\.description)
        for problem in problems { FileHandle.standardError.write(Data("peerd: warning: \(problem)\n".utf8)) }
        for vouch in vouches { print(Vouching.summary(vouch)) }
        print(
            "imported \(storedCount) new events, \(total.duplicates) already held, from \(eventLines) lines of \(path)"
        )
        if !problems.isEmpty {
            throw CommandError("\(problems.count) problem(s) above; those events were not imported")
        }
    }
}

/// The verified heads of an import not kept yet, one per feed.
private struct HeadsToKeep {
    private var waiting: [FeedID: SignedHead]

    init(_ heads: [SignedHead]) {
        waiting = Dictionary(heads.map { ($0.feed, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The heads whose seq the batch's events reach (each feed's events
    /// come in seq order across batches), taken out.
    mutating func reached(by batch: [Event]) -> [SignedHead] {
        guard !waiting.isEmpty else { return [] }
        var due: [SignedHead] = []
        for event in batch {
            if let head = waiting[event.feed], event.seq >= head.seq {
                due.append(head)
                waiting[event.feed] = nil
            }
        }
        return due
    }

    /// Every head not reached by a batch (a file whose last events were refused, say).
    var rest: [SignedHead] { Array(waiting.values) }
}

extension ImportVerification.Replica {
    /// What the importing replica's log and identity tell the check.
    init(log: EventLog, identity: (key: SigningKey, certificate: Certificate?), vouching: Bool) throws {
        let kept = try log.certificates().compactMap { try? Certificate(bytes: $0) }
        var keys = FeedKeys([log.replicaID: [identity.key.publicKey]])
        for certificate in kept { keys.add(certificate.publicKey, for: certificate.replicaID) }
        self.init(
            replicaID: log.replicaID, keys: keys, adminKey: identity.certificate?.adminKey,
            signingOrigins: Set(kept.filter { $0.vouchedBy == nil }.map(\.replicaID)).subtracting([log.replicaID]),
            cursor: try log.cursor(), link: { feed, seq in try log.chainHead(of: feed, at: seq).link },
            vouching: vouching)
    }
}
