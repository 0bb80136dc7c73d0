/// Why the demo stopped: a command that failed, a daemon that did not
/// start, replicas that did not converge. One line for the user.
struct DemoError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
