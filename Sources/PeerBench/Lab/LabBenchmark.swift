import Foundation
import NetworkLab

#if canImport(Glibc)
    import Glibc
#endif

/// `peerd-bench lab`: discovery and first sync across the hosts of
/// `scripts/netlab.sh`, printed as Markdown.
struct LabBenchmark {
    let peerd: String
    /// The `mdns-probe` binary.
    let probe: String
    /// Events the existing replica holds when a new host arrives.
    let events: Int
    /// Arrivals per avahi cache state, and discovery rounds of `mdns-probe`.
    let runs: Int
    let directory: String?

    /// Runs both labs and prints the report; throws when a lab cannot run or a figure misses a check.
    func run() async throws {
        if let reason = NetLab.unavailableReason(executables: [peerd, probe]) {
            throw LabFailure("lab: \(reason)")
        }
        var report = LabReport(events: events, runs: runs)
        Markdown.emit([
            "## peerd-bench lab: `\(peerd)` (\(ShellBenchmark.identity(of: peerd))), run \(Markdown.now)",
            "",
            Markdown.command,
            "- machine: \(Report.machine); two hosts of scripts/netlab.sh per lab (network namespaces on one "
                + "bridge, each with its own D-Bus and avahi-daemon), load average (1 min) \(ShellBenchmark.loadAverage)",
            "- every `peerd run` listens on 0.0.0.0:4100 with `--log-level debug` and finds its peers by mDNS alone;"
                + " times from a daemon's own log are its `ts=` (one machine, one clock)",
        ])

        progress("lab: peerd on two hosts")
        let started = ContinuousClock.now
        var bodyEnded = started
        try await NetLab.with(hosts: 2, prefix: "bl", network: "10.80", peerd: peerd, directory: directory) {
            lab in
            report.peerdLabUp = (ContinuousClock.now - started).seconds
            var arrivals = ArrivalPhase(lab: lab, events: events, runs: runs)
            report.arrivals = try await arrivals.run()
            if let base = arrivals.base {
                report.outages = try await AvahiOutagePhase(lab: lab, base: base, code: arrivals.code).run()
            }
            bodyEnded = ContinuousClock.now
        }
        report.peerdLabDown = (ContinuousClock.now - bodyEnded).seconds
        Markdown.emit(report.peerdSections)

        progress("lab: mdns-probe on two hosts")
        try await NetLab.with(hosts: 2, prefix: "bp", network: "10.81", directory: directory) { lab in
            report.probes = try await ProbePhase(lab: lab, probe: probe, runs: runs).run()
        }
        Markdown.emit(report.probeSection)

        let checks = report.checks
        Markdown.emit(["### Checks", ""] + checks.map { "- \($0.met ? "met" : "**not met**"): \($0.what)" })
        let missed = checks.filter { !$0.met }.count
        if missed > 0 { throw LabFailure("lab: \(missed) of \(checks.count) checks not met (see the report)") }
    }

}
