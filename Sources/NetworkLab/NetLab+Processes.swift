import Foundation

extension NetLab {
    /// Starts `command` detached inside host `host` (`netlab.sh spawn`), with `environment` set
    /// for it, its stdout (and stderr, unless `separateStderr`) in a file of the work directory,
    /// and waits until it runs as `program` (by default the command's file name) in the host's
    /// namespace.
    public func spawn(
        _ name: String, on host: Int, _ command: [String], environment: [String: String] = [:],
        program: String? = nil, separateStderr: Bool = false
    ) async throws -> LabProcess {
        let file = "\(processes.count + 1)." + name.split { !$0.isLetter && !$0.isNumber }.joined(separator: "-")
        let (pidFile, stdoutFile) = (path("\(file).pid"), path("\(file).out"))
        let stderrFile = separateStderr ? path("\(file).err") : nil
        var line = environment.isEmpty ? [] : ["env"] + environment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }
        if let stderrFile { line = ["/bin/sh", "-c", #"exec "$@" 2>"$0""#, stderrFile] + line }
        let startedAt = Date()
        try await netlab(["spawn", "\(host)", pidFile, stdoutFile] + line + command)
        let pidText = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
        guard let pid = Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LabFailure("spawn of \(name) wrote no pid to \(pidFile)")
        }
        let process = LabProcess(
            name: name, host: host, pid: pid,
            program: program ?? URL(fileURLWithPath: command.first ?? name).lastPathComponent, startedAt: startedAt,
            stdoutFile: stdoutFile, stderrFile: stderrFile)
        record(process)
        try await wait("\(name) starting") {
            guard process.isAlive else { throw LabFailure("\(name) exited at start\n\(details())") }
            return process.isRunning
        }
        guard process.isIn(namespace: namespace(of: host)) else {
            throw LabFailure("\(name) (pid \(pid)) is not in namespace \(namespace(of: host))")
        }
        return process
    }

    /// Sends `signal` to `process` and waits until it has ended; returns when it sent the signal.
    @discardableResult
    public func stop(_ process: LabProcess, signal: Int32 = SIGTERM) async throws -> Date {
        let sent = Date()
        try process.send(signal)
        try await wait("\(process.name) ending after signal \(signal)") { !process.isRunning }
        return sent
    }
}
