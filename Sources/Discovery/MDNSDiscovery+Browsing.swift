import CAvahi

/// Browsing and resolving: one browser per client, a resolver per service
/// instance, results through ``ServiceSightings``. Everything here runs on
/// Avahi's poll thread.
extension MDNSDiscovery {
    /// Starts the client's browser unless it runs already.
    func browse(on client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, cavahi_if_unspec(), cavahi_proto_unspec(), Discovery.serviceType, nil, cavahi_lookup_none(),
            { browser, interface, ipProtocol, event, name, _, domain, _, userdata in
                MDNSDiscovery.from(userdata)?.browsed(browser, interface, ipProtocol, event, name, domain)
            }, userdata)
        if browser == nil {
            outlet.send(.warning("mDNS: cannot browse: \(Self.describe(avahi_client_errno(client)))"))
        }
    }

    private func browsed(
        _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            // Not skipped when flagged AVAHI_LOOKUP_RESULT_OUR_OWN: Avahi sets that flag by name, so a
            // remote service whose name this client is also probing for would be lost for good (it
            // renames, the remote one never reappears). TXT `id` tells this replica's own apart.
            guard let browser, let name else { return }
            let instance = ServiceSightings.Instance(
                name: String(cString: name), interface: interface, ipProtocol: ipProtocol)
            sightings.appeared(instance)
            // A resolver frees itself in its callback; the client frees any still running with it.
            let resolver = avahi_service_resolver_new(
                avahi_service_browser_get_client(browser), interface, ipProtocol, name, Discovery.serviceType,
                domain, cavahi_proto_inet(), cavahi_lookup_none(),
                { resolver, interface, ipProtocol, event, name, _, _, _, address, port, txt, _, userdata in
                    MDNSDiscovery.from(userdata)?.resolved(
                        interface, ipProtocol, event, name, address, port, txt)
                    avahi_service_resolver_free(resolver)
                }, userdata)
            if resolver == nil {
                let error = avahi_client_errno(avahi_service_browser_get_client(browser))
                outlet.send(.info("mDNS: cannot resolve '\(instance.name)': \(Self.describe(error))"))
            }
        case AVAHI_BROWSER_REMOVE:
            guard let name else { return }
            outlet.send(
                sightings.disappeared(
                    ServiceSightings.Instance(name: String(cString: name), interface: interface, ipProtocol: ipProtocol)
                ))
        case AVAHI_BROWSER_ALL_FOR_NOW:
            outlet.send(sightings.allForNow())
        case AVAHI_BROWSER_FAILURE:
            // Usually the client failing too; its FAILURE makes a new client and browser.
            let error = browser.map { avahi_client_errno(avahi_service_browser_get_client($0)) } ?? 0
            outlet.send(.info("mDNS: browsing failed: \(Self.describe(error))"))
        default:
            break
        }
    }

    private func resolved(
        _ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol, _ event: AvahiResolverEvent,
        _ name: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
        _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        // A failure (a timeout, mostly) leaves the service unreported; its next NEW tries again.
        guard event == AVAHI_RESOLVER_FOUND, let name, let address, address.pointee.proto == cavahi_proto_inet()
        else { return }
        let instance = ServiceSightings.Instance(
            name: String(cString: name), interface: interface, ipProtocol: ipProtocol)
        outlet.send(
            sightings.resolved(instance, host: Self.text(of: address), port: port, txt: Self.strings(of: txt)))
    }

    /// An address in text form: `10.77.0.12`.
    private static func text(of address: UnsafePointer<AvahiAddress>) -> String {
        var buffer = [CChar](repeating: 0, count: cavahi_address_str_max())
        return buffer.withUnsafeMutableBufferPointer { buffer in
            guard let start = buffer.baseAddress, avahi_address_snprint(start, buffer.count, address) != nil
            else { return "" }
            return String(cString: start)
        }
    }

    /// The strings of a TXT record, in the list's order.
    private static func strings(of list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
        var strings: [String] = []
        var node = list
        while let current = node {
            let bytes = UnsafeBufferPointer(
                start: avahi_string_list_get_text(current), count: avahi_string_list_get_size(current))
            strings.append(String(decoding: bytes, as: UTF8.self))
            node = avahi_string_list_get_next(current)
        }
        return strings
    }
}
