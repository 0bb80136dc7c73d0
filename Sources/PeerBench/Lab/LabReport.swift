/// What `peerd-bench lab` measured, as Markdown sections, and the checks
/// its figures must meet (what the daemon promises; docs/discovery.md).
struct LabReport {
    let events: Int
    let runs: Int
    var peerdLabUp = Double.nan
    var peerdLabDown = Double.nan
    var arrivals = ArrivalPhase.Results()
    var outages = AvahiOutagePhase.Results()
    var probes = ProbePhase.Results()

    /// The peerd lab's tables.
    var peerdSections: [String] {
        var arrival = MarkdownTable(["from `peerd run` on the new host to", "warm avahi cache", "cold avahi cache"])
        let (warm, cold) = (arrivals.warm, arrivals.cold)
        arrival.row(
            "`peer discovered` (host 1 found by mDNS)", Spread(warm.compactMap(\.discovered)).text,
            Spread(cold.compactMap(\.discovered)).text)
        arrival.row(
            "`peer identified` (handshake done)", Spread(warm.map(\.identified)).text,
            Spread(cold.map(\.identified)).text)
        arrival.row(
            "all \(Report.grouped(Double(events))) events held (first sync complete)",
            Spread(warm.map(\.caughtUp)).text,
            Spread(cold.map(\.caughtUp)).text)

        var gone = MarkdownTable([
            "what happened to the peer on host 2", "host 1's `connection closed` after", "reason",
        ])
        gone.row(
            "`kill -9` of its `peerd` (the host stays up)", Figure.seconds(arrivals.killNoticed, digits: 3) + " s",
            "`\(arrivals.killReason)`")
        gone.row(
            "SIGSTOP of its `peerd` (a hung process, or a host gone from the network)",
            Figure.seconds(arrivals.hangNoticed, digits: 2) + " s", "`\(arrivals.hangReason)`")

        var avahi = MarkdownTable(["after `netlab.sh avahi-start` returned", "after"])
        avahi.row(
            "host 1's avahi-daemon SIGKILLed, started again → its peerd published again",
            Figure.seconds(outages.republished, digits: 2) + " s")
        avahi.row(
            "host 2's avahi-daemon started under a peerd that ran without it → both discovered each other",
            Figure.seconds(outages.discoveredOnceStarted, digits: 2) + " s")

        return [
            "### A new host's first sync", "",
            "Host 1 runs a replica holding \(Report.grouped(Double(events))) events; a replica just joined to its "
                + "cluster starts `peerd run` on host 2, \(runs) times with host 2's avahi cache warm (its avahi-daemon "
                + "ran all along) and \(runs) times cold (restarted just before, as on a host that just came up). "
                + "Each run is timed from just before `netlab.sh spawn` (bash, `setsid`, `nsenter` included) to the "
                + "new daemon's own log lines for host 1, and to its database holding every event (polled every "
                + "5 ms); between runs host 1 sees the new daemon's service withdrawn. Median (range):",
            "",
        ] + arrival.lines + [
            "", "### Noticing a peer that is gone", "",
            "On host 1, from the signal to its `connection closed` line:", "",
        ] + gone.lines + [
            "", "### avahi-daemon under a running peerd", "",
        ] + avahi.lines + [
            "",
            "_Lab of two hosts: up \(Figure.seconds(peerdLabUp, digits: 1)) s, down \(Figure.seconds(peerdLabDown, digits: 1)) s._",
        ]
    }

    /// The mdns-probe lab's table.
    var probeSection: [String] {
        var table = MarkdownTable(["mdns-probe (MDNSDiscovery alone)", "median (range)"])
        table.row("start on host 2 → published on host 2", Spread(probes.published).text)
        table.row("start on host 2 → found on host 1", Spread(probes.found).text)
        table.row(
            "host 1's avahi-daemon stopped (TERM); `avahi-start` → found again on host 2",
            Figure.seconds(probes.foundAgain, digits: 2) + " s")
        return [
            "### Discovery alone", "",
            "\(runs) rounds of a probe started on host 2 (found on host 1, then SIGTERM and lost there); times "
                + "are when this process saw each line, polling every 5 ms.", "",
        ] + table.lines
    }

    /// What the figures must meet: a check the lab test used to make.
    var checks: [(what: String, met: Bool)] {
        func median(_ values: [Double]) -> Double { Spread(values).median ?? .infinity }
        return [
            (
                "a new host identifies host 1 within 5 s (median, warm and cold)",
                median(arrivals.warm.map(\.identified)) < 5 && median(arrivals.cold.map(\.identified)) < 5
            ),
            (
                "a new host holds every event within 10 s (median, warm and cold)",
                median(arrivals.warm.map(\.caughtUp)) < 10 && median(arrivals.cold.map(\.caughtUp)) < 10
            ),
            ("a killed peer is noticed within 2 s (its kernel closes the sockets)", arrivals.killNoticed < 2),
            ("a hung peer is closed as `peer silent`", arrivals.hangReason.contains("peer silent")),
            (
                "a hung peer is closed after 4–10 s (the 6 s dead-peer timeout, from the last frame heard)",
                arrivals.hangNoticed > 4 && arrivals.hangNoticed < 10
            ),
        ]
    }
}
