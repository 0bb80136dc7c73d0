import ChildProcesses
import Foundation
import LabReport
import NetworkLab
import Replica

/// The settle phase after the last heal: polling every node until all agree or the deadline passes.
extension LabRun {
    struct Settled {
        var convergedAtMs: Int64?
        /// Per node, when its cursor last changed, to the one all nodes ended with (ms since the start).
        var convergedAt: [String: Int64]
        /// The nodes that did not hold the common state at the deadline, with what they held.
        var laggards: [String]
    }

    func settle(from lastHealMs: Int64) async throws -> Settled {
        var nextSampleMs = nowMs
        var convergedAtMs: Int64?
        var states: [String: (cursor: String, hash: String)] = [:]
        while nowMs - lastHealMs < configuration.settleMs {
            let atMs = nowMs
            for member in nodes.members {
                let name = member.node.name
                guard
                    let state: (cursor: String, hash: String) = try? Self.readLog(
                        member.node, { (Self.text(try $0.cursor()), try $0.stateHash()) })
                else {
                    states[name] = nil
                    continue
                }
                states[name] = state
                noteCursor(name, state.cursor, at: atMs)
            }
            if states.count == nodes.members.count && Set(states.values.map { "\($0.cursor) \($0.hash)" }).count == 1 {
                convergedAtMs = atMs
                break
            }
            if nowMs >= nextSampleMs {
                sample()
                nextSampleMs += 500
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        var convergedAt: [String: Int64] = [:]
        var laggards: [String] = []
        for member in nodes.members {
            let name = member.node.name
            if convergedAtMs != nil, let last = cursorHistory[name]?.last {
                convergedAt[name] = max(last.atMs, lastHealMs)
            } else {
                let held = states[name].map { "cursor \($0.cursor), state hash \($0.hash)" } ?? "an unreadable file"
                laggards.append("\(name) holds \(held)")
            }
        }
        return Settled(convergedAtMs: convergedAtMs, convergedAt: convergedAt, laggards: laggards)
    }
}
