import Gossip
import PeerNet
import SyncProtocol

/// Carrying out the nodes' effects over the virtual network.
extension Simulation {
    /// Does what a node asked, in order, as long as it still runs.
    func perform(_ effects: [SyncNode.Effect], by host: Host) {
        for effect in effects {
            guard let node = node(of: host) else { return }
            switch effect {
            case .send(let id, let message):
                guard network.openOwner(id) == host else { continue }
                for transmission in network.send(message, on: id, now: now, random: &random) {
                    queue.schedule(.arrival(transmission), at: transmission.arrivesAt)
                }
            case .dial(let address):
                dial(address, from: host)
            case .close(let id, _):
                close(id, of: node)
            }
        }
    }

    /// Closes one end after what it sent; the far end hears of it later.
    private func close(_ id: ConnectionID, of node: SyncNode) {
        guard let (peer, at) = network.close(id, now: now) else { return }
        queue.schedule(.hangUp(peer), at: at)
        node.connectionClosed(id, now: now)
    }

    /// A dial connects after a short delay when the target runs and is on
    /// the same side of any partition, and times out otherwise.
    private func dial(_ address: PeerAddress, from host: Host) {
        statistics.dials += 1
        let target = addresses[address]
        let reachable = target.map { replicas[$0].isUp && network.reachable(host.replica, $0) } ?? false
        let delay = random.int(in: reachable ? network.conditions.dialMs : network.conditions.dialTimeoutMs)
        queue.schedule(.dialCompleted(from: host, to: target, address: address), at: now + delay)
    }

    /// The dial's outcome: both ends' nodes see the connection open at once
    /// (the handshake is not simulated), or the dialer hears of the failure.
    func completeDial(from host: Host, to target: Int?, address: PeerAddress) {
        guard let dialer = node(of: host) else { return }
        guard let target, let acceptor = replicas[target].node, network.reachable(host.replica, target) else {
            statistics.dialFailures += 1
            dialer.dialFailed(address, reason: "connection timed out", now: now)
            return
        }
        let acceptorHost = replicas[target].host
        let (outbound, inbound) = network.connect(dialer: host, acceptor: acceptorHost, random: &random)
        perform(dialer.connectionOpened(outbound, dialed: address, now: now), by: host)
        perform(acceptor.connectionOpened(inbound, dialed: nil, now: now), by: acceptorHost)
    }

    /// A message reaches its end: delivered when it is the next record,
    /// otherwise the receiving channel fails and closes the connection.
    func arrive(_ transmission: Transmission) {
        switch network.receive(transmission) {
        case .deliver(let host, let message):
            guard let node = node(of: host) else { return }
            let before = node.cursor
            let effects = node.received(message, on: transmission.to, now: now)
            if scenario.tracksHops, case .events(let batch) = message,
                let sender = network.peerOwner(of: transmission.to)
            {
                hops.delivered(batch, from: sender.replica, to: host.replica, before: before, after: node.cursor)
            }
            perform(effects, by: host)
        case .broken(let host):
            guard let node = node(of: host) else { return }
            close(transmission.to, of: node)
        case .reset(let senderEnd):
            queue.schedule(.hangUp(senderEnd), at: now + network.latency(of: senderEnd))
        case .ignored:
            break
        }
    }

    /// The far end of a closed or reset link learns that it is gone.
    func hangUp(_ id: ConnectionID) {
        guard let host = network.hangUp(id), let node = node(of: host) else { return }
        node.connectionClosed(id, now: now)
    }
}
