import CLinux
import Foundation
import Glibc
import Synchronization

/// Tells when another process may have committed to a database, or
/// deleted or replaced it: inotify on its directory reports writes to the
/// file or its WAL, and the file deleted or moved, and `changed`
/// runs (at most once per `coalesceMs`, on the watcher's thread). It also
/// runs once a second when nothing was reported: a commit's last step
/// updates the WAL index through shared memory, which inotify does not
/// see, so a look that came a moment too early would otherwise be the
/// last until the next write. The executor then asks SQLite
/// (`PRAGMA data_version`) whether anything was really committed.
final class ExternalWrites: Sendable {
    /// Writes within this many milliseconds make one call.
    static let coalesceMs: Int32 = 20

    private let inotify: Int32
    /// Written once to wake the watcher for good.
    private let stopSignal: Int32
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    init(databasePath: String, changed: @escaping @Sendable () -> Void) {
        let directory = (databasePath as NSString).deletingLastPathComponent
        let name = (databasePath as NSString).lastPathComponent
        stopSignal = peersync_eventfd()
        let watcher = peersync_inotify()
        if watcher >= 0, peersync_inotify_watch_directory(watcher, directory.isEmpty ? "." : directory) < 0 {
            close(watcher)
            inotify = -1
        } else {
            inotify = watcher
        }
        let thread = Thread { [self] in watch(fileName: name, changed: changed) }
        thread.name = "peersync-external-writes"
        thread.start()
    }

    /// Ends the watch and waits for its thread.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(stopSignal, &one, MemoryLayout<UInt64>.size)
        finished.wait()
        if inotify >= 0 { close(inotify) }
        close(stopSignal)
    }

    private func watch(fileName: String, changed: @Sendable () -> Void) {
        defer { finished.signal() }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .acquiring) {
            var descriptors = [pollfd(fd: stopSignal, events: Int16(POLLIN), revents: 0)]
            if inotify >= 0 { descriptors.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), 1_000)
            guard running.load(ordering: .acquiring) else { return }
            if ready == 0 {
                changed()  // a second without a report: look anyway
                continue
            }
            guard ready > 0, inotify >= 0, descriptors[1].revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0, Self.mentions(fileName, in: buffer[..<count]) else { continue }
            // Let a burst of writes (one commit touches the WAL several times)
            // finish first, and under a stream of them (this process's own
            // catch-up) wake once per `coalesceMs`, not once per write: wait
            // that long (or for the stop), then take what came meanwhile.
            var stop = [pollfd(fd: stopSignal, events: Int16(POLLIN), revents: 0)]
            _ = poll(&stop, 1, Self.coalesceMs)
            guard running.load(ordering: .acquiring) else { return }
            var drain = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)]
            while poll(&drain, 1, 0) > 0 {
                _ = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            }
            changed()
        }
    }

    /// True when an event in `events` names the database or one of its
    /// companions (`-wal`, `-shm`).
    private static func mentions(_ fileName: String, in events: ArraySlice<UInt8>) -> Bool {
        var offset = events.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= events.endIndex {
            let length = events.withUnsafeBytes { raw in
                Int(raw.loadUnaligned(fromByteOffset: offset - events.startIndex + 12, as: UInt32.self))
            }
            let nameBytes = events[(offset + header)..<min(events.endIndex, offset + header + length)]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            if name.hasPrefix(fileName) { return true }
            offset += header + length
        }
        return false
    }
}
