import Foundation

// peerd-bench: the storage benchmark without a subcommand, or one of the
// subcommands in `Benchmarks.all` (docs/performance.md). Each prints a
// Markdown report on standard output and its progress on standard error.
let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "link-probe" {
        try LinkProbe.main(Array(arguments.dropFirst()))
    } else if let benchmark = Benchmarks.all.first(where: { $0.subcommand.name == arguments.first }) {
        try await benchmark.run(benchmark.subcommand.parse(Array(arguments.dropFirst())))
    } else {
        try await Benchmarks.storage.run(Benchmarks.storage.subcommand.parse(arguments))
    }
} catch let error as UsageError {
    if let help = error.help {
        print(help)
        exit(0)
    }
    FileHandle.standardError.write(Data((error.description + "\n").utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("peerd-bench: \(error)\n".utf8))
    exit(1)
}
