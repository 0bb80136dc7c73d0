import CSodium
import Foundation
import TestSupport
import Testing

@testable import SyncProtocol

@Suite struct SecurityClusterKeyTests {
    @Test func aCodeRoundTripsToTheSameKey() throws {
        for _ in 0..<50 {
            let key = ClusterKey.generate()
            #expect(try ClusterKey(code: key.code) == key)
        }
    }

    @Test func aCodeIsPrefixedAndGroupedForReadingAloud() {
        let code = fixedClusterKey.code
        #expect(code.hasPrefix("psc1-") && code.count == 67)
        let groups = code.dropFirst(5).split(separator: "-")
        #expect(groups.count == 7 && groups.allSatisfy { $0.count == 8 })
        #expect(code == code.lowercased())
    }

    @Test func readingACodeForgivesCaseSpacesDashesAndLookalikes() throws {
        let code = fixedClusterKey.code
        let body = code.dropFirst(5).filter { $0 != "-" }
        let sloppy =
            "  PSC1-"
            + body.uppercased().replacingOccurrences(of: "0", with: "O").replacingOccurrences(
                of: "1", with: "l") + "\n"
        #expect(try ClusterKey(code: sloppy) == fixedClusterKey)
        let spaced = "psc1- " + body.map(String.init).joined(separator: " ")
        #expect(try ClusterKey(code: spaced) == fixedClusterKey)
    }

    @Test func everySingleCharacterTypoIsCaught() {
        let code = Array(fixedClusterKey.code)
        let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz")
        for index in code.indices.dropFirst(5) where code[index] != "-" {
            for replacement in [alphabet[(alphabet.firstIndex(of: code[index])! + 1) % 32], "7", "z"]
            where replacement != code[index] {
                var typo = code
                typo[index] = replacement
                #expect(throws: SecurityError.clusterCodeMistyped, "position \(index)") {
                    try ClusterKey(code: String(typo))
                }
            }
        }
    }

    @Test func swappedNeighboursAreCaught() {
        let code = Array(fixedClusterKey.code)
        for index in code.indices.dropFirst(5).dropLast()
        where code[index] != "-" && code[index + 1] != "-" && code[index] != code[index + 1] {
            var typo = code
            typo.swapAt(index, index + 1)
            #expect(throws: SecurityError.clusterCodeMistyped) { try ClusterKey(code: String(typo)) }
        }
    }

    @Test func textThatIsNotACodeSaysSo() {
        for text in ["", "hello", "psc2-" + fixedClusterKey.code.dropFirst(5), "psc1-abc", fixedClusterKey.code + "x"] {
            #expect(throws: SecurityError.self) { try ClusterKey(code: text) }
            let message = securityErrorText { try ClusterKey(code: text) }
            #expect(message.hasPrefix("not a PeerSync cluster code"), "\(text)")
        }
        let badCharacter = "psc1-u" + fixedClusterKey.code.dropFirst(6)
        #expect(securityErrorText { try ClusterKey(code: badCharacter) }.contains("\"u\" cannot appear"))
        #expect(
            SecurityError.clusterCodeMistyped.description.hasPrefix("checksum mismatch: the code was mistyped"))
    }

    @Test func aKeyIsExactlyThirtyTwoBytes() {
        #expect(throws: SecurityError.invalidKeyLength(31)) { try ClusterKey(bytes: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: SecurityError.invalidKeyLength(33)) { try ClusterKey(bytes: [UInt8](repeating: 1, count: 33)) }
        #expect(ClusterKey.generate() != ClusterKey.generate())
    }

    @Test func theFingerprintIsStableShortAndKeyedWithTheClusterKey() throws {
        let fingerprint = fixedClusterKey.fingerprint
        #expect(fingerprint.count == 8 && fingerprint.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(try ClusterKey(bytes: (0..<32).map { UInt8($0) }).fingerprint == fingerprint)
        #expect(ClusterKey.generate().fingerprint != fingerprint)
        // BLAKE2b-128 keyed with the cluster key over the context string; first four bytes.
        var mac = [UInt8](repeating: 0, count: 16)
        let context = Array("peersync/1 cluster fingerprint".utf8)
        _ = crypto_generichash(&mac, 16, context, UInt64(context.count), (0..<32).map { UInt8($0) }, 32)
        #expect(fingerprint == mac.prefix(4).map { String(format: "%02x", $0) }.joined())
    }

    @Test func describingAKeyShowsOnlyItsFingerprint() {
        let key = fixedClusterKey
        #expect("\(key)" == "ClusterKey(fingerprint: \(key.fingerprint))")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains(String(key.code.dropFirst(5).prefix(8))))
        #expect(!dumped.contains("secret"))
    }
}

/// The description of the error `body` throws, or "" when it throws none.
func securityErrorText<Result>(_ body: () throws -> Result) -> String {
    do {
        _ = try body()
        return ""
    } catch {
        return "\(error)"
    }
}
