extension NetLab {
    /// Stops host `host`'s avahi-daemon: SIGTERM (it sends goodbyes) or SIGKILL (a crash).
    public func avahiStop(_ host: Int, signal: String = "TERM") async throws {
        try await netlab(["avahi-stop", "\(host)", signal])
    }

    /// (Re)starts host `host`'s avahi-daemon and waits until it has started up.
    public func avahiStart(_ host: Int) async throws { try await netlab(["avahi-start", "\(host)"]) }

    /// Host `host` neither sends nor hears mDNS from now on; unicast keeps working.
    public func blockMulticast(_ host: Int) async throws { try await netlab(["block-multicast", "\(host)"]) }

    /// Undoes ``blockMulticast(_:)``.
    public func unblockMulticast(_ host: Int) async throws { try await netlab(["unblock-multicast", "\(host)"]) }

    /// The resolved `_peersync._tcp` services (`=;…` lines of `avahi-browse -rpt`) seen from host `host`.
    public func browse(from host: Int) async throws -> [String] {
        let result = try await exec(host, ["avahi-browse", "-rpt", "_peersync._tcp"])
        return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("=;") }
    }
}
