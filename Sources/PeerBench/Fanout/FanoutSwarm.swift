import Foundation
import PeerNet
import SyncProtocol
import Synchronization

/// Every `FanoutClient` of `peerd-bench relay-fanout` on one event loop
/// thread: connects them a few at a time (the relay admits at most 16
/// handshakes from one address at once), ticks their sessions every
/// second, and counts what they receive.
///
/// `@unchecked Sendable`: the clients, the connect queue and the scratch
/// buffer are touched on the loop thread only; what other threads read
/// (`progress`, the latency figures) is behind `figures`' mutex.
final class FanoutSwarm: @unchecked Sendable {
    /// Connections in the connect or the handshake at once.
    static let handshakesAtOnce = 8
    /// A client whose connection was refused tries again this much later.
    static let retryMs: Int64 = 200

    /// What the swarm counted, readable from any thread.
    struct Figures {
        var syncing = 0
        var refused = 0
        var lastRefusal = ""
        /// Connections that ended after they synced (each one a lost replica).
        var lost = 0
        var deliveries = FanoutDeliveries()
        /// Batches of events the clients received since the last reset.
        var batches = 0
    }

    let port: UInt16
    let clusterKey: ClusterKey
    private let loop: EventLoop
    private let figures = Mutex(Figures())
    // Loop-thread state.
    private var clients: [Int: FanoutClient] = [:]
    private var waiting: [Int] = []
    private var inFlight = 0
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 8)

    init(port: UInt16, clusterKey: ClusterKey) throws {
        self.port = port
        self.clusterKey = clusterKey
        loop = try EventLoop(name: "fanout-clients")
    }

    deinit { scratch.deallocate() }

    /// Starts the loop and connects `count` clients, a few at a time.
    func connect(_ count: Int) {
        loop.start()
        loop.execute { [self] in
            waiting = Array(0..<count)
            startWaiting()
            scheduleTicks()
        }
    }

    /// What has been counted so far.
    var snapshot: Figures { figures.withLock { $0 } }

    /// One figure read under the lock, without copying the rest.
    func read<T>(_ figure: (Figures) -> T) -> T { figures.withLock { figure($0) } }

    /// Forgets the deliveries counted so far (the warm-up's).
    func resetDeliveries() {
        figures.withLock {
            $0.deliveries = FanoutDeliveries()
            $0.batches = 0
        }
    }

    /// Closes every client and stops the loop.
    func stop() {
        loop.execute { [self] in
            for client in clients.values {
                loop.unwatch(client.socket.descriptor)
                client.close("benchmark over")
            }
            clients = [:]
        }
        loop.stop()
    }

    // MARK: - The loop thread

    private func startWaiting() {
        while inFlight < Self.handshakesAtOnce, !waiting.isEmpty {
            let index = waiting.removeFirst()
            do {
                let client = try FanoutClient(index: index, port: port, clusterKey: clusterKey) { [unowned self] in
                    self.note($0, from: index)
                }
                clients[index] = client
                inFlight += 1
                try loop.watch(client.socket.descriptor, for: [.readable, .writable]) { [unowned self] readiness in
                    self.serve(client, readiness)
                }
            } catch {
                figures.withLock {
                    $0.refused += 1
                    $0.lastRefusal = "\(error)"
                }
                retry(index)
            }
        }
    }

    private func serve(_ client: FanoutClient, _ readiness: EventLoop.Readiness) {
        if readiness.contains(.writable) { client.writable() }
        if client.isOpen && (readiness.contains(.readable) || readiness.contains(.hangUp)) {
            client.readable(into: scratch)
        }
        if client.isOpen {
            loop.rewatch(client.socket.descriptor, for: client.wantsToWrite ? [.readable, .writable] : .readable)
        }
    }

    private func note(_ report: FanoutClient.Report, from index: Int) {
        switch report {
        case .delivered(let payloads, let atNanos):
            // Read before the lock, which is taken once per batch.
            let sent = payloads.map(FanoutDeliveries.sendTime(in:))
            figures.withLock {
                for sent in sent { $0.deliveries.note(sentNanos: sent, atNanos: atNanos) }
                $0.batches += 1
            }
        case .syncing:
            inFlight -= 1
            figures.withLock { $0.syncing += 1 }
            startWaiting()
        case .closed(let reason, let wasSyncing):
            if let client = clients.removeValue(forKey: index) { loop.unwatch(client.socket.descriptor) }
            if wasSyncing {
                figures.withLock {
                    $0.syncing -= 1
                    $0.lost += 1
                    $0.lastRefusal = reason
                }
            } else {
                inFlight -= 1
                figures.withLock {
                    $0.refused += 1
                    $0.lastRefusal = reason
                }
                retry(index)
            }
        }
    }

    private func retry(_ index: Int) {
        loop.schedule(after: Self.retryMs) { [unowned self] in
            waiting.append(index)
            startWaiting()
        }
    }

    /// Every second, each session's cursor round (the relay closes a connection silent for 6 s).
    private func scheduleTicks() {
        loop.schedule(after: 1_000) { [unowned self] in
            for client in clients.values { client.tick() }
            for client in clients.values where client.isOpen && client.wantsToWrite {
                loop.rewatch(client.socket.descriptor, for: [.readable, .writable])
            }
            scheduleTicks()
        }
    }
}
