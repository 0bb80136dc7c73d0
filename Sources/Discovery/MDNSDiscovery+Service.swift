import Lifecycle

extension MDNSDiscovery: Service {
    public var name: String { "discovery" }

    /// Publishes and browses until the task is cancelled, then withdraws the service.
    public func run() async throws {
        start()
        await Cancellation.wait()
        stop()
    }
}
