import Lifecycle
import PeerNet
import SyncProtocol

/// The HTTP API as a service of the daemon's group: it serves from
/// `start` on; when its task is cancelled (the first to stop), new requests
/// get `503`, the change streams end, and the server stops.
final class HTTPAPIService: Service, Sendable {
    // `api` and `server` are set in `init` and used through their own locking.
    let name = "http"
    let api: DaemonAPI
    let server: HTTPServer

    /// - Parameter peerDescriptors: descriptors the sync peers and their
    ///   handshakes may hold, left out of the HTTP server's budget.
    init(api: DaemonAPI, peerDescriptors: Int = 0, log: @escaping @Sendable (LogRecord) -> Void) {
        self.api = api
        let metrics = api.metrics
        var limits = HTTPServer.Limits()
        limits.descriptorsBesides = UInt32(clamping: peerDescriptors)
        server = HTTPServer(
            limits: limits, handler: { api.handle($0) }, refused: { metrics.countRequest(status: $0) }, log: log)
    }

    /// Binds `address` and serves; returns the port.
    func start(on address: PeerAddress) throws -> UInt16 {
        do {
            return try server.start(host: address.host, port: address.port)
        } catch {
            throw CommandError(
                "cannot serve the HTTP API on \(address): \(error); pick another with --http HOST:PORT, or --http off")
        }
    }

    func run() async throws {
        await Cancellation.wait()
        api.beginShutdown()
        server.quiesce()
        server.stop()
    }
}
