import Foundation

/// `peerd demo`: three replicas of one cluster on this machine, each a real
/// `peerd` process, through offline edits, a conflict, live sync and a late
/// joiner, ending with their state hashes side by side. `scripts/demo.sh`
/// builds `peerd` and runs it.
enum DemoCommand {
    static let command = Command(
        path: ["demo"], usage: "demo [--no-mdns]",
        summary: """
            Shows PeerSync on this machine: a tablet, a phone and a gateway, each a replica in a temporary \
            directory run by this `peerd` as child processes, join one cluster, edit offline (a rename on one \
            side against a delete on the other), then run `peerd run` over loopback and converge; a live edit \
            reaches the others and a late joiner catches up through a peer. Prints every command it runs and \
            ends with the three state hashes side by side. The daemons find each other with mDNS when an \
            avahi-daemon runs (or, as root with a D-Bus system bus, one can be started), else with --peer; \
            --no-mdns always uses --peer. Everything it started and wrote is removed at the end, also on Ctrl-C.
            """,
        flags: ["no-mdns"]
    ) { arguments, _ in
        _ = try arguments.positional()
        unblockSignals()
        let stage = try DemoStage()
        defer { stage.cleanup.run() }
        let discovery = DemoDiscovery.choose(allowMDNS: !arguments.has("no-mdns"), cleanup: stage.cleanup)
        var script = DemoScript(stage: stage, discovery: discovery)
        do {
            try script.play()
        } catch {
            stage.cleanup.waitForExitIfInterrupted()
            throw error
        }
    }

    /// A child inherits the signal mask of the thread that starts it; a
    /// parent that blocks SIGTERM (a test runner's thread) must not make the
    /// demo's daemons deaf to it.
    private static func unblockSignals() {
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
    }
}
