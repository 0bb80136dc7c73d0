import Gossip
import PeerNet
import SyncProtocol

/// Carrying out the nodes' effects over the virtual network.
extension Simulation {
    /// Does what a node asked, in order, as long as it still runs; then
    /// sets its next tick to its deadline. Storage work is done on the
    /// replica's log at once; its answer comes back at once, or after a
    /// delay when the scenario has one (as a real storage executor's does).
    func perform(_ effects: [SyncNode.Effect], by host: Host) {
        for effect in effects {
            guard let replica = replica(of: host) else { return }
            switch effect {
            case .send(let id, let message):
                guard network.openOwner(id) == host else { continue }
                switch message {
                case .prune: statistics.prunes += 1
                case .graft: statistics.grafts += 1
                case .hello, .cursor, .events, .ack, .goodbye, .peers, .state, .revocations, .certificates, .forkProofs,
                    .heads, .checkpoints, .checkpointAcks, .basesWanted, .bases, .historyFloor:
                    break
                }
                for transmission in network.send(message, on: id, now: now, random: &random) {
                    queue.schedule(.arrival(transmission), at: transmission.arrivesAt)
                }
            case .dial(let address):
                dial(address, from: host)
            case .close(let id, _):
                close(id, of: replica)
            case .revoked:
                break  // the simulator's nodes have no admin key, so they learn none
            case .read, .store, .computeState, .writePendingProjections, .quarantine, .compareHeads, .keepCertificates,
                .takeCheckpoint, .readBases, .startFromCheckpoint, .keepAcks, .dropHistory:
                if case .dropHistory(let checkpoint) = effect { checkHistoryDrop(of: checkpoint, on: replica) }
                guard let answer = DirectStorage.execute(effect, on: replica.log!) else { continue }
                if let delay = scenario.storageDelayMs {
                    queue.schedule(.storageAnswer(host, answer), at: now + random.int(in: delay))
                } else {
                    perform(answer.deliver(to: &replica.node!, now: now), by: host)
                }
            }
        }
        scheduleTick(of: host)
    }

    /// Schedules the node's next tick at its deadline, unless one is due sooner.
    private func scheduleTick(of host: Host) {
        guard let replica = replica(of: host) else { return }
        // Never at `now` again: a deadline that a tick cannot move would spin
        // (PeerManagerTests check that none is left after a tick).
        let deadline = max(now + 1, replica.node!.nextDeadline)
        if let scheduled = nextTickAt[host.replica], scheduled <= deadline { return }
        nextTickAt[host.replica] = deadline
        queue.schedule(.tick(host), at: deadline)
    }

    /// Closes one end after what it sent; the far end hears of it later.
    private func close(_ id: ConnectionID, of replica: SimulatedReplica) {
        guard let (peer, at) = network.close(id, now: now) else { return }
        queue.schedule(.hangUp(peer), at: at)
        replica.node!.connectionClosed(id, now: now)
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
        guard let dialer = replica(of: host) else { return }
        guard let target, replicas[target].isUp, network.reachable(host.replica, target) else {
            statistics.dialFailures += 1
            dialer.node!.dialFailed(address, reason: "connection timed out", now: now)
            perform([], by: host)
            return
        }
        let acceptor = replicas[target]
        let acceptorHost = acceptor.host
        let (outbound, inbound) = network.connect(dialer: host, acceptor: acceptorHost, random: &random)
        perform(dialer.node!.connectionOpened(outbound, dialed: address, now: now), by: host)
        perform(acceptor.node!.connectionOpened(inbound, dialed: nil, now: now), by: acceptorHost)
    }

    /// A message reaches its end: delivered when it is the next record,
    /// otherwise the receiving channel fails and closes the connection.
    func arrive(_ transmission: Transmission) {
        switch network.receive(transmission) {
        case .deliver(let host, let message):
            guard let replica = replica(of: host) else { return }
            let before = try? replica.log!.cursor()
            perform(replica.node!.received(message, on: transmission.to, now: now), by: host)
            if scenario.tracksHops, case .events(let batch) = message,
                let sender = network.peerOwner(of: transmission.to), let before, let log = replica.log
            {
                // Without a storage delay `perform` stored the batch at once: it is in the log (or refused) now.
                let after = (try? log.cursor()) ?? before
                hops.delivered(batch, from: sender.replica, to: host.replica, before: before, after: after)
            }
        case .broken(let host):
            guard let replica = replica(of: host) else { return }
            close(transmission.to, of: replica)
            perform([], by: host)
        case .reset(let senderEnd):
            queue.schedule(.hangUp(senderEnd), at: now + network.latency(of: senderEnd))
        case .ignored:
            break
        }
    }

    /// The far end of a closed or reset link learns that it is gone.
    func hangUp(_ id: ConnectionID) {
        guard let host = network.hangUp(id), let replica = replica(of: host) else { return }
        replica.node!.connectionClosed(id, now: now)
        perform([], by: host)
    }
}
