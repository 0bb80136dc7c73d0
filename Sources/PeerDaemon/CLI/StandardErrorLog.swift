import Foundation
import Gossip
import Replica
import SyncProtocol

/// Writes log records to stderr, one `key=value` line each, prefixed with
/// the UTC time: `ts=2026-11-29T21:59:27.123Z level=info event=listening msg=listening ...`.
struct StandardErrorLog: Sendable {
    let minimumLevel: LogRecord.Level

    func write(_ record: LogRecord) {
        guard record.level >= minimumLevel else { return }
        let line =
            "ts=\(Date(timeIntervalSince1970: Double(WallClock.system.nowMs()) / 1000).formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)))Z "
            + record.line + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
