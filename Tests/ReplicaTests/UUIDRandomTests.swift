import Foundation
import Testing

@testable import Replica

@Suite("Event ids")
struct UUIDRandomTests {
    @Test("Generated event ids are distinct version-4 UUIDs")
    func versionFourAndDistinct() {
        let ids = (0..<1_000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(20) {
            let text = id.lowercased
            #expect(Array(text)[14] == "4", "version nibble of \(text)")
            #expect("89ab".contains(Array(text)[19]), "variant nibble of \(text)")
        }
    }
}
