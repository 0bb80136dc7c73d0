import DaemonClient
import Foundation

/// `peerd wait --converged-with N`: blocks until the daemon on DIR and N
/// connected peers hold the same events and report the same state hash.
enum WaitCommand {
    static let command = Command(
        path: ["wait"], usage: "wait --converged-with N [--timeout SECONDS]",
        summary: """
            Waits until this replica's daemon and at least N connected peers report the same vector cursor \
            and state hash, and no peer holds events this one lacks. Draws a progress bar on a terminal, \
            one line per second otherwise. Exit code 0: converged; 1: the timeout (default 60 s) passed \
            first, or no daemon runs on DIR.
            """,
        options: ["converged-with", "timeout"]
    ) { arguments, directory in
        _ = try arguments.positional()
        guard let text = arguments.options["converged-with"], let peers = Int(text), peers >= 0 else {
            throw UsageError("--converged-with needs a number of peers (0 or more)")
        }
        let timeoutText = arguments.options["timeout"] ?? "60"
        guard let timeout = Double(timeoutText), timeout > 0 else {
            throw UsageError("--timeout needs a number of seconds above 0, not \"\(timeoutText)\"")
        }
        guard let daemon = DaemonInfo.running(in: directory), let api = try daemon.endpoint() else {
            throw CommandError("no daemon with an HTTP API is running on \(directory.path); start `peerd run` first")
        }
        try wait(api, peers: peers, timeout: timeout)
    }

    private static func wait(_ api: DaemonEndpoint, peers: Int, timeout: Double) throws {
        let started = ContinuousClock.now
        let terminal = isatty(STDOUT_FILENO) == 1
        var lastLine: ContinuousClock.Instant?
        while true {
            let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(try api.call("GET", "/status").utf8))
            let sync = status.sync
            let converged = sync.peers_in_sync >= peers && sync.events_missing == 0
            let elapsed = ContinuousClock.now - started
            let line =
                "\(min(sync.peers_in_sync, peers))/\(peers) peers in sync, \(sync.events_missing) events missing, "
                + "\(sync.peers_connected) connected, \(status.replica.event_count) events, "
                + "hash \(status.replica.state_hash.prefix(12)) (\(elapsed.components.seconds) s)"
            if terminal {
                let done = peers == 0 ? 20 : 20 * min(sync.peers_in_sync, peers) / peers
                let bar = String(repeating: "#", count: done) + String(repeating: "-", count: 20 - done)
                write("\r[\(bar)] \(line)\u{1B}[K")
            } else if converged || lastLine.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
                write(line + "\n")
                lastLine = ContinuousClock.now
            }
            if converged {
                write(terminal ? "\nconverged\n" : "converged\n")
                return
            }
            if elapsed >= .seconds(timeout) {
                if terminal { write("\n") }
                throw CommandError("not converged with \(peers) peers after \(timeoutText(timeout)) s: \(line)")
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    private static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    private static func timeoutText(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
