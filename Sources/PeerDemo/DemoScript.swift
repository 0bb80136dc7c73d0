import Foundation

/// The story `peerd-demo` tells, act by act, on a ``DemoStage``.
struct DemoScript {
    let stage: DemoStage
    let discovery: DemoDiscovery
    private var daemons: [DemoDaemon] = []

    init(stage: DemoStage, discovery: DemoDiscovery) {
        self.stage = stage
        self.discovery = discovery
    }

    mutating func play() throws {
        DemoConsole.line("PeerSync demo: three replicas of one cluster on this machine, each run by a real `peerd`.")
        DemoConsole.line("work directory: \(stage.directory) (removed at the end)")
        DemoConsole.line("discovery: \(discovery.description)")

        DemoConsole.heading("A tablet starts a cluster; a phone joins it with the share code")
        try stage.peerd("init", "--data", "tablet")
        let code = try stage.peerd("cluster-code", "--data", "tablet")
        try stage.peerd("init", "--join", code, "--data", "phone")

        DemoConsole.heading("Offline, the tablet creates items and hands them to the phone on a USB stick")
        let bolts = try stage.peerd("item", "create", "Bolts", "5", "--data", "tablet")
        let nuts = try stage.peerd("item", "create", "Nuts", "40", "--data", "tablet")
        try stage.peerd("export", "usb.ndjson", "--data", "tablet")
        try stage.peerd("import", "usb.ndjson", "--data", "phone")

        DemoConsole.heading("Still offline, a conflict: the phone renames Bolts while the tablet deletes it")
        try stage.peerd("item", "rename", bolts, "Hex bolts", "--data", "phone")
        try stage.peerd("item", "delete", bolts, "--data", "tablet")
        try stage.peerd("item", "create", "Washers", "100", "--data", "phone")

        DemoConsole.heading(
            discovery.usesMDNS
                ? "Both run the daemon and find each other with mDNS"
                : "Both run the daemon; the phone dials the tablet")
        let tablet = try start("tablet", peers: [])
        let phone = try start("phone", peers: [tablet])
        let (met, meetingTime) = try stage.converge(["tablet", "phone"])
        DemoConsole.line("converged in \(Self.format(meetingTime)): both hold \(met)")
        try stage.peerd("items", "--include-deleted", "--data", "tablet")
        try stage.peerd("items", "--include-deleted", "--data", "phone")
        try expectDeleted(bolts, on: ["tablet", "phone"])

        DemoConsole.heading("While the daemons run, an edit on the phone reaches the tablet at once")
        try stage.peerd("item", "note", nuts, "aisle 4", "--data", "phone")
        let (_, liveTime) = try stage.converge(["phone", "tablet"])
        DemoConsole.line("the tablet has it \(Self.format(liveTime)) later (measured by polling `peerd status`)")
        try stage.peerd("items", "--data", "tablet")

        DemoConsole.heading(
            discovery.usesMDNS
                ? "A gateway joins late, finds the others with mDNS, and catches up"
                : "A gateway joins late, knows only the phone, and catches up through it")
        try stage.peerd("init", "--join", code, "--data", "gateway")
        _ = try start("gateway", peers: [phone])
        let (all, catchUpTime) = try stage.converge(["tablet", "phone", "gateway"])
        DemoConsole.line("caught up in \(Self.format(catchUpTime)): all three hold \(all)")
        try stage.peerd("items", "--data", "gateway")

        DemoConsole.heading("The daemons stop on SIGTERM: goodbyes to their peers, then exit 0")
        for daemon in daemons {
            DemoConsole.line("\(daemon.name): exit \(daemon.stop())")
        }
        DemoConsole.heading("The tablet's daemon log")
        DemoConsole.output((try? String(contentsOfFile: tablet.logPath, encoding: .utf8)) ?? "")

        DemoConsole.heading("State hashes side by side")
        for name in ["tablet", "phone", "gateway"] {
            let status = try stage.status(name)
            DemoConsole.line(name.padding(toLength: 8, withPad: " ", startingAt: 0) + " " + status.state_hash)
        }
    }

    /// Starts the daemon of `name`: on loopback with `--peer`s, or on every
    /// interface without them when mDNS is what finds peers.
    private mutating func start(_ name: String, peers: [DemoDaemon]) throws -> DemoDaemon {
        var arguments: [String]
        if discovery.usesMDNS {
            // mDNS announces the host's interface addresses, which a daemon
            // bound to 127.0.0.1 would not answer on.
            arguments = ["--listen", "0.0.0.0:0"]
        } else {
            arguments = ["--listen", "127.0.0.1:0", "--no-mdns"]
            for peer in peers { arguments += ["--peer", peer.address] }
        }
        arguments += ["--http", "127.0.0.1:0"]
        let daemon = try stage.daemon(name, arguments)
        daemons.append(daemon)
        return daemon
    }

    /// Checks what the demo claims: the delete beat the concurrent rename.
    private func expectDeleted(_ id: String, on names: [String]) throws {
        for name in names {
            let json = try stage.peerd(["items", "--json", "--include-deleted", "--data", name], shown: false)
            let items = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
            guard let item = items.first(where: { $0["id"] as? String == id }), item["deleted"] as? Bool == true else {
                throw DemoError("the \(name) does not show item \(id) as deleted")
            }
        }
        DemoConsole.line("Bolts is deleted on both, under its new name: the delete wins over the concurrent rename")
    }

    private static func format(_ duration: Duration) -> String {
        let ms = Int(duration / .milliseconds(1))
        return ms < 1000 ? "\(ms) ms" : String(format: "%.1f s", Double(ms) / 1000)
    }
}
