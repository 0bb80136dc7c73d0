import Foundation
import NetworkLab

/// `MDNSDiscovery` alone, in `mdns-probe` processes (docs/discovery.md).
struct ProbePhase {
    let lab: NetLab
    /// The `mdns-probe` executable.
    let probe: String
    let runs: Int

    /// What the phase measured, in seconds.
    struct Results {
        /// From spawning a probe on host 2 to its `info published` line, per round.
        var published: [Double] = []
        /// From spawning a probe on host 2 to host 1's `found` line for it, per round.
        var found: [Double] = []
        /// From `avahi-start` on host 1 (its run included) to host 2 finding host 1's probe again.
        var foundAgain = Double.nan
    }

    func run() async throws -> Results {
        var results = Results()
        let a = try await start("a", on: 1, id: "aaaaaaaa-0001")
        try await lab.wait("a publishing") { a.stdout.count("info published ") == 1 }
        for round in 1...runs {
            progress("lab: mdns-probe round \(round) of \(runs)")
            let id = "b\(round)b\(round)b\(round)b\(round)-000\(round)"
            let b = try await start("b\(round)", on: 2, id: id)
            var published: Double?
            try await lab.wait("a finding \(id)", every: .milliseconds(5)) {
                if published == nil && b.stdout.count("info published ") > 0 {
                    published = Date().timeIntervalSince(b.startedAt)
                }
                return Self.count("found ", id, in: a) > 0
            }
            let found = Date().timeIntervalSince(b.startedAt)
            results.found.append(found)
            results.published.append(published ?? found)
            try await lab.stop(b)
            try await lab.wait("a losing \(id)") { Self.count("lost ", id, in: a) > 0 }
        }

        progress("lab: mdns-probe under an avahi-daemon that restarts")
        let b = try await start("b", on: 2, id: "bbbbbbbb-0002")
        try await lab.wait("b finding a") { Self.count("found ", "aaaaaaaa-0001", in: b) == 1 }
        try await lab.avahiStop(1)
        try await lab.wait("b losing a (the stopping avahi-daemon sends goodbyes)") {
            Self.count("lost ", "aaaaaaaa-0001", in: b) == 1
        }
        try await lab.wait("a warning that avahi-daemon is gone") {
            a.stdout.count("warning ", "avahi-daemon is not running") > 0
        }
        let restarted = ContinuousClock.now
        try await lab.avahiStart(1)
        try await lab.wait("b finding a again", every: .milliseconds(5)) {
            Self.count("found ", "aaaaaaaa-0001", in: b) == 2
        }
        results.foundAgain = (ContinuousClock.now - restarted).seconds
        return results
    }

    /// Starts `mdns-probe --id ID` in host `host` (port 4100, cluster `c0ffee00`).
    private func start(_ label: String, on host: Int, id: String) async throws -> LabProcess {
        try await lab.spawn(
            "mdns-probe \(label)", on: host, [probe, "--port", "4100", "--id", id, "--cluster", "c0ffee00"])
    }

    /// How many `event` lines (`found `, `lost `) of replica `id` the probe printed.
    private static func count(_ event: String, _ id: String, in probe: LabProcess) -> Int {
        probe.stdout.lines.filter { $0.hasPrefix(event) && $0.contains(" id=\(id) ") }.count
    }
}
