// An app that only talks to a running `peerd` over its HTTP API: it links
// DaemonClient, which needs neither libsodium nor SQLite.
// Usage: status-probe PORT
import DaemonClient

let endpoint = DaemonEndpoint(host: "127.0.0.1", port: UInt16(CommandLine.arguments[1])!)
let reply = try endpoint.request("GET", "/status")
print(reply.status, reply.text)
