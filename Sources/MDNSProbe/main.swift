// mdns-probe: runs MDNSDiscovery alone and prints one line per DiscoveryEvent
// on stdout, until SIGTERM or SIGINT. The Discovery tests run it inside
// scripts/netlab.sh hosts; by hand:
//
//   scripts/netlab.sh exec 1 .build/debug/mdns-probe --port 4100 --id r1 --cluster 3f09a1c2
//
// Options: --port N --id REPLICA --cluster FINGERPRINT [--role peer|relay]
//          [--name INSTANCE] [--version V] [--retry-ms MS]
import Discovery
import Dispatch
import Glibc
import SyncProtocol

/// Writes `text` and a newline to stdout in one write(2) (`print` buffers
/// and `stdout` is not concurrency-safe).
func writeLine(_ text: String, to fd: Int32 = STDOUT_FILENO) {
    var bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
    }
}

func fail(_ message: String) -> Never {
    writeLine("mdns-probe: \(message)", to: STDERR_FILENO)
    writeLine(
        "usage: mdns-probe --port N --id REPLICA --cluster FINGERPRINT [--role peer|relay] [--name INSTANCE]"
            + " [--version V] [--retry-ms MS]", to: STDERR_FILENO)
    exit(2)
}

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard flag.hasPrefix("--"), let value = arguments.popFirst() else { fail("expected --option VALUE at '\(flag)'") }
    options[String(flag.dropFirst(2))] = value
}
let known: Set = ["port", "id", "cluster", "role", "name", "version", "retry-ms"]
if let unknown = options.keys.first(where: { !known.contains($0) }) { fail("unknown option --\(unknown)") }
guard let port = options["port"].flatMap(UInt16.init) else { fail("--port N is required") }
guard let replicaID = options["id"] else { fail("--id REPLICA is required") }
guard let cluster = options["cluster"] else { fail("--cluster FINGERPRINT is required") }
guard let role = ServiceRole(text: options["role"] ?? "peer") else { fail("--role is peer or relay") }
guard let version = UInt16(options["version"] ?? "\(WireProtocol.version)") else { fail("--version is a number") }
guard let retryMs = Int(options["retry-ms"] ?? "2000"), retryMs > 0 else { fail("--retry-ms is a positive number") }

let discovery = MDNSDiscovery(
    advertisement: MDNSAdvertisement(
        replicaID: replicaID, port: port, clusterFingerprint: cluster, role: role, protocolVersion: version,
        instanceName: options["name"]),
    retryInterval: .milliseconds(retryMs)
) { event in
    writeLine(event.description)
}

// A parent may have left SIGTERM blocked (test runners do); the signal sources need it deliverable.
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
sigaddset(&stopSignals, SIGTERM)
sigaddset(&stopSignals, SIGINT)
pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { number in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        discovery.stop()
        exit(0)
    }
    source.resume()
    return source
}
discovery.start()
withExtendedLifetime(signals) { dispatchMain() }
