import ConvergenceLab
import Foundation
import Lifecycle
import NetworkLab

// `peerd-lab`: a convergence lab of real nodes on network-namespace hosts (docs/lab.md).

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("peerd-lab: \(message)\n".utf8))
    exit(code)
}

let words = Array(CommandLine.arguments.dropFirst())
if words.isEmpty || words.contains("--help") || words == ["help"] {
    print(LabCommandLine.usage, terminator: "")
    exit(words.isEmpty ? 2 : 0)
}
let configuration: LabConfiguration
let json: Bool
do {
    (configuration, json) = try LabCommandLine.configuration(words, tools: .running)
} catch let error as LabUsageError {
    fail("\(error)\nsee `peerd-lab --help`", code: 2)
} catch {
    fail("cannot run here: \(error)", code: 2)
}
if let reason = ConvergenceLab.unavailableReason(configuration) { fail("cannot run here: \(reason)", code: 2) }
let task = Task { try await ConvergenceLab.run(configuration, progress: ProgressLine(json: json)) }
// A handler of its own per signal (the daemon's UnixSignals): whichever thread the kernel picks.
let signals = UnixSignals([SIGINT, SIGTERM])
Task {
    for await _ in signals {
        task.cancel()
        break
    }
}
do {
    let outcome = try await task.value
    print(outcome.summary, terminator: "")
    print("report: \(outcome.directory.path)/lab-report.json")
    exit(outcome.report.passed ? 0 : 1)
} catch {
    // A signal cancels the run; what was running then may fail in other ways than a CancellationError
    // (the terminal's SIGINT also reaches the lab's curl and netlab.sh children).
    if task.isCancelled { fail("interrupted; its hosts and daemons are gone", code: 130) }
    fail("the lab itself failed (seed \(configuration.seed)): \(error)", code: 3)
}
