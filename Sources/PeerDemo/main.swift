import Foundation

// peerd-demo: three replicas of one cluster on this machine, each a real
// `peerd` process (the `peerd` beside this executable), through offline
// edits, a conflict, live sync and a late joiner, ending with their state
// hashes side by side. `scripts/demo.sh` builds both and runs it.

let usage = """
    usage: peerd-demo [--no-mdns]

    Shows PeerSync on this machine: a tablet, a phone and a gateway, each a replica in a temporary directory \
    run by the `peerd` next to this program as child processes, join one cluster, edit offline (a rename on \
    one side against a delete on the other), then run `peerd run` over loopback and converge; a live edit \
    reaches the others and a late joiner catches up through a peer. Prints every command it runs and ends \
    with the three state hashes side by side. The daemons find each other with mDNS when an avahi-daemon \
    runs (or, as root with a D-Bus system bus, one can be started), else with --peer; --no-mdns always uses \
    --peer. Everything it started and wrote is removed at the end, also on Ctrl-C.

    Options:
      --no-mdns  give the daemons each other's addresses with --peer instead of mDNS
      --help     show this help

    """

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("peerd-demo: \(message)\n".utf8))
    exit(code)
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage, terminator: "")
    exit(0)
}
if let unknown = arguments.first(where: { $0 != "--no-mdns" }) {
    fail("unknown argument \"\(unknown)\"\n\(usage)", code: 2)
}
do {
    let stage = try DemoStage()
    defer { stage.cleanup.run() }
    let discovery = DemoDiscovery.choose(allowMDNS: !arguments.contains("--no-mdns"), cleanup: stage.cleanup)
    var script = DemoScript(stage: stage, discovery: discovery)
    do {
        try script.play()
    } catch {
        stage.cleanup.waitForExitIfInterrupted()
        throw error
    }
} catch {
    fail("error: \(error)", code: 1)
}
