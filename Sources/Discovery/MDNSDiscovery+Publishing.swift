import CAvahi

/// Publishing the service: one entry group per client, renamed on collision.
/// Everything here runs on Avahi's poll thread.
extension MDNSDiscovery {
    /// Adds the service to the client's entry group unless it holds it already.
    func publish(on client: OpaquePointer) {
        guard advertisement.problem == nil else { return }
        if group == nil {
            // Avahi calls groupChanged inside avahi_entry_group_new, before it returns.
            let made = avahi_entry_group_new(
                client, { group, state, userdata in MDNSDiscovery.from(userdata)?.groupChanged(group, state) },
                userdata)
            guard let made else {
                outlet.send(.warning("mDNS: cannot publish: \(Self.describe(avahi_client_errno(client)))"))
                return
            }
            group = made
        }
        guard let group, avahi_entry_group_is_empty(group) != 0 else { return }
        addService(to: group)
    }

    /// Adds the service and commits; a name already taken on this host is
    /// replaced by its alternative at once.
    private func addService(to group: OpaquePointer) {
        for _ in 0..<16 {
            let result = withTXTList(advertisement.txtRecord) { txt in
                avahi_entry_group_add_service_strlst(
                    group, cavahi_if_unspec(), cavahi_proto_unspec(), cavahi_publish_none(), instanceName,
                    Discovery.serviceType, nil, nil, advertisement.port, txt)
            }
            if result == cavahi_err_collision() {
                rename()
                avahi_entry_group_reset(group)
                continue
            }
            guard result >= 0 else {
                outlet.send(.warning("mDNS: cannot publish '\(instanceName)': \(Self.describe(result))"))
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 {
                outlet.send(.warning("mDNS: cannot publish '\(instanceName)': \(Self.describe(committed))"))
            }
            return
        }
        outlet.send(.warning("mDNS: cannot publish: every alternative of '\(instanceName)' is taken"))
    }

    private func groupChanged(_ changed: OpaquePointer?, _ state: AvahiEntryGroupState) {
        guard let changed else { return }
        group = changed
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            outlet.send(.info("published '\(instanceName)' on port \(advertisement.port)"))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host probed or holds this name: pick the alternative and publish again.
            rename()
            avahi_entry_group_reset(changed)
            addService(to: changed)
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = avahi_client_errno(avahi_entry_group_get_client(changed))
            outlet.send(.warning("mDNS: publishing '\(instanceName)' failed: \(Self.describe(error))"))
        default:
            break
        }
    }

    /// `NAME` → `NAME #2` → `NAME #3` …
    private func rename() {
        guard let alternative = avahi_alternative_service_name(instanceName) else { return }
        let old = instanceName
        instanceName = String(cString: alternative)
        avahi_free(alternative)
        outlet.send(.info("the name '\(old)' is taken: renamed to '\(instanceName)' after a collision"))
    }

    /// Calls `body` with `strings` as an `AvahiStringList`, in order, freed afterwards.
    private func withTXTList<R>(_ strings: [String], _ body: (UnsafeMutablePointer<AvahiStringList>?) -> R) -> R {
        var list: UnsafeMutablePointer<AvahiStringList>?
        for string in strings.reversed() { list = avahi_string_list_add(list, string) }  // it prepends
        defer { avahi_string_list_free(list) }
        return body(list)
    }
}
