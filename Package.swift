// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PeerSync",
    products: [
        .library(name: "Replica", targets: ["Replica"]),
        .library(name: "DaemonClient", targets: ["DaemonClient"]),
        .executable(name: "peerd", targets: ["PeerDaemon"]),
        .executable(name: "peerd-bench", targets: ["PeerBench"]),
        .executable(name: "mdns-probe", targets: ["MDNSProbe"]),
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
        .target(name: "Replica", dependencies: ["CSQLite"]),
        .target(name: "Gossip", dependencies: ["Replica", "CSodium"]),
        .target(name: "Discovery", dependencies: ["CAvahi", "Gossip"]),
        .executableTarget(name: "MDNSProbe", dependencies: ["Discovery", "Gossip"]),
        .executableTarget(
            name: "PeerDaemon", dependencies: ["Replica", "Gossip", "Discovery", "CMicroHTTPD", "DaemonClient"]),
        .target(name: "DaemonClient", dependencies: ["Gossip"]),
        .executableTarget(name: "PeerBench", dependencies: ["Replica", "Gossip", "Simulator", "CSQLite"]),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .target(name: "Simulator", dependencies: ["Gossip", "Replica"], path: "Tests/Simulator"),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "TestSupport"]),
        .testTarget(name: "GossipTests", dependencies: ["Gossip", "Replica", "TestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "Gossip", "TestSupport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Replica", "Gossip", "DaemonClient", "TestSupport"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "Gossip", "Replica", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
