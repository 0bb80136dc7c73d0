/// One measured row of the throughput table.
struct PhaseResult {
    /// What was measured, as the table shows it.
    var name: String
    /// The log size of this part of the run (the `--events` value).
    var size: Int
    /// Events written (or read) in the timed calls.
    var events: Int
    /// Payload bytes of those events.
    var payloadBytes: Int
    /// Time spent in the timed calls only.
    var seconds: Double
    /// CPU time (user + system) spent in the timed calls.
    var cpuSeconds: Double
    /// `VmHWM` after the phase; the peak is reset before each phase when the kernel allows.
    var peakMiB: Double
    /// `VmRSS` at the end of the phase.
    var endMiB: Double
    /// Bytes the phase sent to storage (`write_bytes` of `/proc/self/io`), when known.
    var diskWrittenBytes: Int64?
    /// Anything else a reader needs to read the row.
    var note = ""
    /// Whether this row is a write that is compared with the raw baselines.
    var comparesWithRaw = true
    /// Whether this row only explains where the time goes (printed in the analysis table).
    var isAnalysis = false

    /// Events per second of timed time.
    var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }

    /// CPU microseconds per event.
    var cpuMicrosecondsPerEvent: Double { events > 0 ? cpuSeconds * 1e6 / Double(events) : 0 }

    /// Bytes sent to storage per payload byte.
    var writeAmplification: Double? {
        guard let written = diskWrittenBytes, payloadBytes > 0 else { return nil }
        return Double(written) / Double(payloadBytes)
    }

    /// Payload megabytes (10^6 bytes) per second of timed time.
    var payloadMBPerSecond: Double { seconds > 0 ? Double(payloadBytes) / 1e6 / seconds : 0 }
}

/// The resident set size at one point while a log grows.
struct MemoryCheckpoint {
    /// The log size of this part of the run.
    var size: Int
    /// Events in the log when the sample was taken.
    var events: Int
    /// `VmRSS` then, in MiB.
    var residentMiB: Double
    /// The part of `residentMiB` that is SQLite's heap (mostly its page cache).
    var sqliteHeapMiB: Double
    /// The part of `residentMiB` mapped from files or shared memory (the WAL index).
    var fileBackedMiB: Double
    /// `VmHWM` then (peak since the phase began), in MiB.
    var peakMiB: Double
    /// The database file's size then, in bytes.
    var databaseBytes: Int64
    /// The WAL file's size then, in bytes.
    var walBytes: Int64
}

/// Single-event commit latencies of the library and of raw SQLite, sampled alternately.
struct LatencyResult {
    /// One `EventLog.append(NewEvent)` per transaction.
    var library: LatencySummary
    /// One raw `INSERT` per transaction (`BEGIN IMMEDIATE; INSERT; COMMIT`).
    var raw: LatencySummary
}
