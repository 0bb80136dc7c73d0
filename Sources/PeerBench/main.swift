import Foundation

// peerd-bench: the storage benchmark (see docs/performance.md), or with
// `crash-writer` the acknowledging writer of the crash integration test,
// or with `sync` the sync benchmark (`peerd-bench sync --help`), or with
// `shell` the black-box benchmark of running daemons (`peerd-bench shell --help`),
// or with `thin` a thin client's push and pull rates (`peerd-bench thin --help`),
// or with `lab` discovery and first sync across network namespaces (`peerd-bench lab --help`),
// or with `topology` the mesh against the hub (`peerd-bench topology --help`),
// or with `sessions` what single-writer sessions cost (`peerd-bench sessions --help`),
// or with `import` `peerd import` against in-process ingest (`peerd-bench import --help`),
// or with `wifi` catch-up over a shaped, lossy link between namespaces (`peerd-bench wifi --help`;
// `link-probe` is its raw TCP transfer, run inside the hosts),
// or with `identity` what identities and signing cost (`peerd-bench identity --help`),
// or with `domains` a declared domain against the Swift Item (`peerd-bench domains --help`).
let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "crash-writer" {
        try CrashWriter.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "sync" {
        try SyncBenchmark(options: SyncOptions.parse(Array(arguments.dropFirst()))).run()
    } else if arguments.first == "shell" {
        try ShellBenchmark(options: ShellOptions.parse(Array(arguments.dropFirst()))).run()
    } else if arguments.first == "thin" {
        try ThinBenchmark.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "lab" {
        try await LabBenchmark(options: LabOptions.parse(Array(arguments.dropFirst()))).run()
    } else if arguments.first == "topology" {
        try TopologyBenchmark(options: TopologyOptions.parse(Array(arguments.dropFirst()))).run()
    } else if arguments.first == "sessions" {
        try SessionsBenchmark.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "import" {
        try ImportBenchmark.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "wifi" {
        try await WifiBenchmark(options: WifiOptions.parse(Array(arguments.dropFirst()))).run()
    } else if arguments.first == "link-probe" {
        try LinkProbe.main(Array(arguments.dropFirst()))
    } else if arguments.first == "domains" {
        try DomainsBenchmark.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "identity" {
        try IdentityBenchmark.parse(Array(arguments.dropFirst())).run()
    } else if arguments.first == "simulate-scale" {
        try SimulateScale.parse(Array(arguments.dropFirst())).run()
    } else {
        try BenchmarkRun(options: BenchOptions.parse(arguments)).run()
    }
} catch let error as UsageError {
    if error.message == nil {
        print(error.description)
        exit(0)
    }
    FileHandle.standardError.write(Data((error.description + "\n").utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("peerd-bench: \(error)\n".utf8))
    exit(1)
}
