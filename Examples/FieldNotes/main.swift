// A field app with a domain of its own that syncs with a `peerd run` over
// encrypted TCP, without a daemon of its own (docs/replica.md, "Embedding
// sync"). Usage: field-notes DIR CLUSTER-CODE HOST:PORT TEXT
import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol

/// The app's domain: one note per site, the latest text wins.
struct SiteNote: EventSourcedEntity {
    struct Event: Codable, Sendable { var text: String }
    static let entityType = "site-note"
    var id: String
    var text = ""
    init(id: String) { self.id = id }
    mutating func apply(_ event: Event, info: ModificationInfo) { text = event.text }
}

let (directory, code, peer, text) = (
    CommandLine.arguments[1], CommandLine.arguments[2], CommandLine.arguments[3], CommandLine.arguments[4]
)
let path = directory + "/notes.db"
// The app's identity key signs what it writes; peers verify every event.
let key = try SigningKey.readOrCreate(atPath: directory + "/identity.key")
var options = EventLog.Options()
options.domains = [Domain(SiteNote.self)]
options.feedSigner = FeedSigner(key)
if !FileManager.default.fileExists(atPath: path) {
    _ = try EventLog.create(at: path, replicaID: "notes-" + UUID().uuidString.lowercased(), options: options)
}
let storage = try StorageExecutor(path: path, options: options)
var configuration = GossipService.Configuration(replicaID: storage.replicaID)
configuration.listenPort = 0
configuration.node.identity = (key, nil)
configuration.peers = [PeerAddress(peer)!]
let sync = try GossipService(
    storage: storage, clusterKey: try ClusterKey(code: code), configuration: configuration, logger: { _ in })
try sync.start()

let note = CanonicalJSON.text(of: SiteNote.Event(text: text))
try storage.write { try $0.append(NewEvent(entityType: SiteNote.entityType, entityID: "site-1", payload: note)) }
// The note is pushed at once; wait until the peer and this app hold the same events (the
// daemon does not fold `site-note`, so once compared the two state hashes differ).
let holdsTheSame: (PeerRow) -> Bool = { $0.inSync || ($0.diverged && $0.eventsToReceive == 0 && $0.eventsToSend == 0) }
while !sync.peerTable().contains(where: holdsTheSame) { Thread.sleep(forTimeInterval: 0.05) }
let site = try storage.read { try $0.projection(SiteNote.self, id: "site-1") }
print("site-1: \(site?.text ?? "-"); \(try storage.read { try $0.eventCount() }) events, in sync with \(peer)")
sync.stop(reason: "done")
storage.close()
