import PeerNet
import Replica

extension SyncNode {
    /// The peer manager's directives as effects; a connection it closes
    /// gets a goodbye with the reason first when its session runs.
    mutating func carryOut(_ directives: [PeerManager.Directive], now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        for directive in directives {
            switch directive {
            case .dial(let address):
                effects.append(.dial(address))
            case .close(let id, let reason):
                guard sessions[id] != nil else {
                    effects.append(.close(id, reason: reason))
                    continue
                }
                effects += perform(sessions[id]!.close(reason: reason), on: id, now: now)
            }
        }
        return effects
    }

    /// Peer exchange: tells a newly identified peer every replica address we
    /// know, and every other peer the new one's address, each with its role
    /// when known (a replica in the hub dials only relays).
    mutating func exchangePeers(on id: ConnectionID, hello: Hello) -> [Effect] {
        let connection = manager.connections[id]
        let address =
            connection?.dialed
            ?? remoteHosts[id].flatMap { host in
                hello.listenPort == 0 ? nil : PeerAddress(host: host, port: hello.listenPort)
            }
        var effects: [Effect] = []
        let known = knownAdverts().filter { $0.replicaID != hello.replicaID }
        if !known.isEmpty { effects.append(.send(id, .peers(known))) }
        if let address {
            let advert = PeerAdvert(replicaID: hello.replicaID, address: address, role: hello.role)
            adverts[id] = advert
            for other in sessions.keys.sorted() where other != id && sessions[other]?.peer != nil {
                effects.append(.send(other, .peers([advert])))
            }
        }
        return effects
    }

    /// Addresses of replicas we are connected to or have reached before.
    private func knownAdverts() -> [PeerAdvert] {
        var byReplica: [String: PeerAdvert] = [:]
        for target in manager.targets.values.sorted(by: { $0.address < $1.address }) {
            if let replicaID = target.replicaID, replicaID != configuration.hello.replicaID,
                target.state != .retired
            {
                byReplica[replicaID] = PeerAdvert(replicaID: replicaID, address: target.address, role: target.role)
            }
        }
        for advert in adverts.values { byReplica[advert.replicaID] = advert }
        return byReplica.values.sorted { $0.replicaID < $1.replicaID }
    }
}
