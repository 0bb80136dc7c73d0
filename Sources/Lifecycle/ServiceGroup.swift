import Synchronization

/// Runs services under one lifecycle, as swift-service-lifecycle's
/// `ServiceGroup` does: all start in order, and when a stop signal comes
/// (or any service ends or fails) they stop in reverse order, each one
/// only after the services started after it have returned, within a
/// deadline.
///
/// ```swift
/// let group = ServiceGroup([storage, gossip, discovery, http], shutdownDeadline: .seconds(5)) { print($0) }
/// let outcome = try await group.run(stoppingOn: UnixSignals([SIGTERM, SIGINT]))
/// ```
public struct ServiceGroup: Sendable {
    /// How a run ended.
    public enum Outcome: Sendable, Equatable {
        /// A stop signal came (its name) and every service stopped in time.
        case stopped(signal: String)
        /// A service returned by itself; the others were stopped.
        case serviceEnded(String)
        /// Stopping took longer than the deadline; work was abandoned.
        case deadlinePassed
    }

    /// What happened, for the log.
    public enum Event: Sendable {
        case stopping(signal: String)
        case serviceStopped(String)
        case serviceFailed(String, any Error)
        case deadlinePassed(waitingFor: String)
    }

    /// What starts the stop: a signal, or the service at this index ending.
    private enum Trigger: Sendable {
        case signal(String)
        case ended(Int)
    }

    private let services: [any Service]
    private let shutdownDeadline: Duration
    private let report: @Sendable (Event) -> Void

    public init(
        _ services: [any Service], shutdownDeadline: Duration, report: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.services = services
        self.shutdownDeadline = shutdownDeadline
        self.report = report
    }

    /// Runs every service until `stops` yields (a signal's name: `UnixSignals`) or a service ends,
    /// then stops them in reverse order. Rethrows the first failure of a
    /// service's `run()` once the others have stopped. A cancelled run
    /// stops them too, as a signal named `cancelled` would.
    public func run<Stops: AsyncSequence & Sendable>(stoppingOn stops: Stops) async throws -> Outcome
    where Stops.Element == String {
        let (triggers, trigger) = AsyncStream.makeStream(of: Trigger.self)
        let tasks = services.enumerated().map { index, service in
            Task {
                defer { trigger.yield(.ended(index)) }
                try await service.run()
            }
        }
        let forwarding = Task {
            for try await name in stops { trigger.yield(.signal(name)) }
        }
        var first = Trigger.signal("cancelled")
        // Ends without an element only when this task is cancelled.
        for await next in triggers {
            first = next
            break
        }
        forwarding.cancel()
        _ = await forwarding.result
        switch first {
        case .signal(let name): report(.stopping(signal: name))
        case .ended(let index): report(.stopping(signal: "\(services[index].name) ended"))
        }
        // In a task of its own, so that a cancelled run still waits for each service in turn.
        guard await Task(operation: { await stopInReverse(tasks) }).value else { return .deadlinePassed }
        for (index, task) in tasks.enumerated() {
            if case .failure(let error) = await task.result, !(error is CancellationError) {
                report(.serviceFailed(services[index].name, error))
                throw error
            }
        }
        switch first {
        case .signal(let name): return .stopped(signal: name)
        case .ended(let index): return .serviceEnded(services[index].name)
        }
    }

    /// Cancels the tasks last to first, each after the one before has
    /// returned; false when the deadline passed first.
    private func stopInReverse(_ tasks: [Task<Void, any Error>]) async -> Bool {
        let deadline = ContinuousClock.now + shutdownDeadline
        for index in tasks.indices.reversed() {
            tasks[index].cancel()
            // Whichever comes first: the service returns, or the deadline.
            // (A task group would wait for both.)
            let (outcomes, outcome) = AsyncStream.makeStream(of: Bool.self)
            let returned = Task {
                _ = await tasks[index].result
                outcome.yield(true)
            }
            let timer = Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                outcome.yield(false)
            }
            var finished = false
            for await first in outcomes {
                finished = first
                break
            }
            timer.cancel()
            guard finished else {
                returned.cancel()
                report(.deadlinePassed(waitingFor: services[index].name))
                return false
            }
            report(.serviceStopped(services[index].name))
        }
        return true
    }
}
