// swift-tools-version:6.0
import PackageDescription

// The target graph (docs/architecture.md draws it): dependencies only point
// down, from the executables through the shells to the pure cores.
//
//   PeerDaemon, PeerBench, PeerDemo, MDNSProbe,    executables (PeerLab: peerd-lab, the convergence lab;
//   PeerLab, LabLink                               LabLink: peerd-lab-link, its delayed link)
//   ConvergenceLab                                 peerd-lab's runs: plan, faults, workload, checks
//   Gossip, Discovery, DaemonClient, Simulator,    shells and tools (SharedStore: a relay's PostgreSQL store)
//   SharedStore
//   SyncProtocol, Replica, Lifecycle, PeerNet      cores and the small shared layers
//   ChildProcesses, NetworkLab                     child processes and netlab.sh hosts, for the demo,
//                                                  the benchmark, the tests and ConvergenceLab
//   LabReport                                      a peerd-lab run's report: JSON, terminal table, HTML
//   CSQLite, CSodium, CAvahi, CMicroHTTPD, CLinux  C libraries from Debian
//   CPacket, CZstd, CPostgres
//
// peerd links none of the lab's targets (ConvergenceLab, NetworkLab, LabReport, ChildProcesses):
// `swift build --product peerd` builds none of them.
let package = Package(
    name: "PeerSync",
    products: [
        .library(name: "Replica", targets: ["Replica"]),
        .library(name: "Gossip", targets: ["Gossip"]),
        .library(name: "Discovery", targets: ["Discovery"]),
        .library(name: "DaemonClient", targets: ["DaemonClient"]),
        .library(name: "Lifecycle", targets: ["Lifecycle"]),
        .executable(name: "peerd", targets: ["PeerDaemon"]),
        .executable(name: "peerd-bench", targets: ["PeerBench"]),
        .executable(name: "peerd-demo", targets: ["PeerDemo"]),
        .executable(name: "mdns-probe", targets: ["MDNSProbe"]),
        .executable(name: "peerd-lab", targets: ["PeerLab"]),
        .executable(name: "peerd-lab-link", targets: ["LabLink"]),
        .executable(name: "field-notes", targets: ["FieldNotes"]),
        .executable(name: "status-probe", targets: ["StatusProbe"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            // Batch compression on the wire (docs/protocol.md "Compressed batches").
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        .systemLibrary(
            // No pkgConfig: avahi-client.pc adds -D_REENTRANT, which SwiftPM
            // warns about; the headers are in /usr/include and the modulemap
            // links both libraries. scripts/setup.sh installs libavahi-client-dev.
            name: "CAvahi"
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            // A relay's shared store (docs/relay.md "Relays on a shared PostgreSQL").
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            // epoll, eventfd and inotify: in libc, left out of Glibc's Swift module.
            name: "CLinux"
        ),
        .systemLibrary(
            // AF_PACKET sockets for peerd-lab-link, the lab's delayed link (libc; nothing to link).
            name: "CPacket"
        ),
        .target(name: "PeerNet", dependencies: ["CLinux"]),
        .target(name: "Replica", dependencies: ["CSQLite", "CSodium"]),
        .target(name: "SyncProtocol", dependencies: ["Replica", "PeerNet", "CSodium", "CZstd"]),
        .target(name: "Lifecycle", dependencies: ["CLinux"]),
        .target(name: "Gossip", dependencies: ["SyncProtocol", "Replica", "PeerNet", "CLinux", "Lifecycle"]),
        .target(name: "Discovery", dependencies: ["CAvahi", "PeerNet", "Lifecycle"]),
        .target(name: "SharedStore", dependencies: ["CPostgres", "Replica"]),
        .target(name: "DaemonClient", dependencies: ["PeerNet"]),
        .target(name: "Simulator", dependencies: ["Gossip", "SyncProtocol", "Replica", "PeerNet"]),
        .target(name: "ChildProcesses"),
        .target(
            // netlab.sh is a resource so that a build puts it beside the executables (LabTools finds it there).
            name: "NetworkLab", dependencies: ["ChildProcesses"], resources: [.copy("netlab.sh")]),
        .target(name: "LabReport"),
        .target(name: "ConvergenceLab", dependencies: ["NetworkLab", "ChildProcesses", "LabReport", "Replica"]),
        .executableTarget(name: "MDNSProbe", dependencies: ["Discovery", "SyncProtocol"]),
        .executableTarget(name: "LabLink", dependencies: ["CPacket", "CLinux"]),
        .executableTarget(
            name: "PeerLab", dependencies: ["ConvergenceLab", "NetworkLab", "ChildProcesses", "LabReport", "Lifecycle"]),
        .executableTarget(
            name: "PeerDaemon",
            dependencies: [
                "Replica", "SyncProtocol", "Gossip", "Discovery", "PeerNet", "Lifecycle", "CMicroHTTPD", "DaemonClient",
                "CLinux", "SharedStore",
            ],
            // Options for tests and the lab only (`peerd run --clock-offset-ms`): debug builds have them, a
            // release peerd does not (docs/lab.md, "Test-only options").
            swiftSettings: [.define("PEERD_TEST_FLAGS", .when(configuration: .debug))]),
        .executableTarget(name: "PeerDemo", dependencies: ["ChildProcesses"]),
        .executableTarget(
            name: "PeerBench",
            dependencies: [
                "Replica", "SyncProtocol", "Gossip", "PeerNet", "Simulator", "DaemonClient", "CSQLite", "CSodium",
                "ChildProcesses", "NetworkLab",
            ]),
        .executableTarget(
            name: "FieldNotes", dependencies: ["Gossip", "Replica", "SyncProtocol", "PeerNet"],
            path: "Examples/FieldNotes"),
        .executableTarget(name: "StatusProbe", dependencies: ["DaemonClient"], path: "Examples/StatusProbe"),
        .target(
            name: "TestSupport", dependencies: ["ChildProcesses", "NetworkLab", "LabReport"], path: "Tests/TestSupport"),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "TestSupport", "CSodium"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "TestSupport"]),
        .testTarget(name: "SyncProtocolTests", dependencies: ["SyncProtocol", "Replica", "PeerNet", "TestSupport"]),
        .testTarget(
            name: "GossipTests", dependencies: ["Gossip", "SyncProtocol", "Replica", "PeerNet", "TestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "PeerNet", "TestSupport"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Replica", "SyncProtocol", "Gossip", "DaemonClient", "PeerNet", "TestSupport", "LabReport",
            ]),
        .testTarget(name: "ConvergenceLabTests", dependencies: ["ConvergenceLab", "NetworkLab", "LabReport"]),
        .testTarget(name: "LabReportTests", dependencies: ["LabReport", "TestSupport"]),
        .testTarget(
            name: "SimulatorTests", dependencies: ["Simulator", "Gossip", "SyncProtocol", "Replica", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
