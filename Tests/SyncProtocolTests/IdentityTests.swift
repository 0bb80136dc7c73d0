import PeerNet
import Replica
import Testing

@testable import SyncProtocol

/// Certificates, identity proofs and the trust policy (docs/identity.md).
@Suite struct IdentityTests {
    static let admin = try! SigningKey(seed: [UInt8](repeating: 1, count: 32))
    static let replica = try! SigningKey(seed: [UInt8](repeating: 2, count: 32))
    static let issuedMs: UInt64 = 1_796_000_000_000
    static let expiresMs: UInt64 = 1_798_600_000_000

    /// The docs/identity.md test vector, as hex.
    static let vectorHex =
        "50534354018a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c8139770ea87d175f56a35466c3"
        + "4c7ecccb8d8a91b4ee37a25df60f5b8fc9b3940c616c6963652d7461626c65740205616c696365047465616d0105616c6963"
        + "6580d0c4cfa2348084a8a7ac34b91483803cff11b919119c3233f94231f4656215327ab1712e4c8ffa89e94cb9c639f8c5c0"
        + "910f06a924521eac6f087b8d36ed20d0654774984b0ce92c508302"

    /// The docs/identity.md test vector.
    static func vector() -> Certificate {
        Certificate.issue(
            by: admin, for: replica.publicKey, replicaID: "alice-tablet", read: ["alice", "team"], write: ["alice"],
            issuedMs: issuedMs, expiresMs: expiresMs)
    }

    static func trust(nowMs: UInt64 = issuedMs) -> TrustPolicy {
        TrustPolicy(adminKey: admin.publicKey, wallClockMs: { nowMs })
    }

    @Test func theCertificateTestVectorHasItsDocumentedBytes() throws {
        #expect(
            Hex.string(IdentityTests.admin.publicKey)
                == "8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c")
        #expect(
            Hex.string(IdentityTests.replica.publicKey)
                == "8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394")
        let certificate = IdentityTests.vector()
        #expect(Hex.string(certificate.bytes) == IdentityTests.vectorHex)
        let read = try Certificate(bytes: certificate.bytes)
        #expect(read == certificate)
        #expect(
            read.replicaID == "alice-tablet" && read.readScopes == ["alice", "team"] && read.writeScopes == ["alice"])
        #expect(read.expiresMs == IdentityTests.expiresMs && read.issuedMs == IdentityTests.issuedMs)
    }

    @Test func anAlteredOrCutCertificateIsRefused() {
        let bytes = IdentityTests.vector().bytes
        for index in [5, 40, 70, 80, bytes.count - 70, bytes.count - 1] {
            var altered = bytes
            altered[index] ^= 0x01
            #expect(throws: IdentityError.self) { try Certificate(bytes: altered) }
        }
        for count in [0, 4, 40, bytes.count - 1] {
            #expect(throws: IdentityError.self) { try Certificate(bytes: Array(bytes.prefix(count))) }
        }
        var scope = bytes
        // "alice" of the read scopes becomes "alicf": the signature no longer matches.
        let alice = Array("alice".utf8)
        let at = (0..<(scope.count - 5)).first { Array(scope[$0..<($0 + 5)]) == alice && $0 > 90 }!
        scope[at + 4] = UInt8(ascii: "f")
        #expect(throws: IdentityError.badCertificateSignature(replicaID: "alice-tablet")) {
            try Certificate(bytes: scope)
        }
    }

    @Test func aCertificateIsCheckedForItsReplicaKeyAndExpiry() throws {
        let certificate = IdentityTests.vector()
        try certificate.check(
            replicaID: "alice-tablet", publicKey: IdentityTests.replica.publicKey, nowMs: IdentityTests.expiresMs - 1)
        #expect(throws: IdentityError.certificateExpired(replicaID: "alice-tablet", expiresMs: IdentityTests.expiresMs))
        {
            try certificate.check(
                replicaID: "alice-tablet", publicKey: IdentityTests.replica.publicKey, nowMs: IdentityTests.expiresMs)
        }
        #expect(throws: IdentityError.self) {
            try certificate.check(replicaID: "bob", publicKey: IdentityTests.replica.publicKey, nowMs: 0)
        }
        #expect(throws: IdentityError.self) {
            try certificate.check(replicaID: "alice-tablet", publicKey: IdentityTests.admin.publicKey, nowMs: 0)
        }
        let expired = IdentityError.certificateExpired(replicaID: "alice-tablet", expiresMs: IdentityTests.expiresMs)
        #expect(
            expired.description
                == "the certificate of replica alice-tablet expired at 2026-12-30T03:06:40Z; ask an admin for a new "
                + "one (`peerd invite`) and run `peerd init --join CODE` on that replica")
    }

    @Test func theTrustPolicyAdmitsOnlyAProvedUnexpiredCertificateOfItsAdmin() throws {
        let binding = [UInt8](repeating: 7, count: 32)
        let proved = PeerIdentity.proving(
            IdentityTests.replica, certificate: IdentityTests.vector(), binding: binding, role: .initiator)
        let trust = IdentityTests.trust()
        #expect(try trust.admit(proved, replicaID: "alice-tablet", binding: binding, role: .initiator) == proved)
        // The proof is for one connection and one side.
        #expect(throws: IdentityError.badProof(replicaID: "alice-tablet")) {
            try trust.admit(
                proved, replicaID: "alice-tablet", binding: [UInt8](repeating: 8, count: 32), role: .initiator)
        }
        #expect(throws: IdentityError.badProof(replicaID: "alice-tablet")) {
            try trust.admit(proved, replicaID: "alice-tablet", binding: binding, role: .responder)
        }
        #expect(throws: IdentityError.noCertificate(replicaID: "alice-tablet")) {
            try trust.admit(nil, replicaID: "alice-tablet", binding: binding, role: .initiator)
        }
        let bare = PeerIdentity.proving(IdentityTests.replica, certificate: nil, binding: binding, role: .initiator)
        #expect(throws: IdentityError.noCertificate(replicaID: "alice-tablet")) {
            try trust.admit(bare, replicaID: "alice-tablet", binding: binding, role: .initiator)
        }
        // Another replica id than the certificate's: someone else's certificate.
        #expect(throws: IdentityError.self) {
            try trust.admit(proved, replicaID: "mallory", binding: binding, role: .initiator)
        }
        let stranger = try SigningKey(seed: [UInt8](repeating: 3, count: 32))
        let foreign = Certificate.issue(
            by: stranger, for: IdentityTests.replica.publicKey, replicaID: "alice-tablet", read: [], write: [],
            issuedMs: 0, expiresMs: nil)
        let foreignIdentity = PeerIdentity.proving(
            IdentityTests.replica, certificate: foreign, binding: binding, role: .initiator)
        #expect(throws: IdentityError.untrustedAdmin(replicaID: "alice-tablet", adminKey: stranger.publicKey)) {
            try trust.admit(foreignIdentity, replicaID: "alice-tablet", binding: binding, role: .initiator)
        }
        #expect(throws: IdentityError.certificateExpired(replicaID: "alice-tablet", expiresMs: IdentityTests.expiresMs))
        {
            try IdentityTests.trust(nowMs: IdentityTests.expiresMs + 1).admit(
                proved, replicaID: "alice-tablet", binding: binding, role: .initiator)
        }
        // An open cluster takes a peer without identity, and still checks a proof.
        #expect(try TrustPolicy.open.admit(nil, replicaID: "x", binding: binding, role: .initiator) == nil)
        #expect(try TrustPolicy.open.admit(bare, replicaID: "alice-tablet", binding: binding, role: .initiator) == bare)
        #expect(throws: IdentityError.badProof(replicaID: "alice-tablet")) {
            try TrustPolicy.open.admit(bare, replicaID: "alice-tablet", binding: [], role: .initiator)
        }
    }

    @Test func aHelloCarriesTheIdentityAndReadsBackEqual() throws {
        let identity = PeerIdentity.proving(
            IdentityTests.replica, certificate: IdentityTests.vector(), binding: [1, 2, 3], role: .responder)
        for hello in [
            Hello(replicaID: "alice-tablet", listenPort: 4100, identity: identity),
            Hello(
                replicaID: "alice-tablet", listenPort: 4100,
                identity: PeerIdentity(
                    publicKey: identity.publicKey, proof: identity.proof, certificate: nil)),
            Hello(replicaID: "alice-tablet", listenPort: 4100),
        ] {
            var encoder = MessageEncoder()
            var decoder = MessageDecoder()
            let bytes = encoder.encode(.hello(hello))
            #expect(try decoder.decode(bytes) == .hello(hello))
            var cut = MessageDecoder()
            #expect(throws: WireError.self) { try cut.decode(Array(bytes.dropLast())) }
        }
        var encoder = MessageEncoder()
        var bytes = encoder.encode(.hello(Hello(replicaID: "a", listenPort: 1, identity: identity)))
        bytes[bytes.count - 3] ^= 1  // inside the certificate's signature
        var decoder = MessageDecoder()
        #expect(throws: WireError.self) { try decoder.decode(bytes) }
    }

    @Test func identityAndInviteCodesReadBackAndCatchTypos() throws {
        let code = IdentityCode(replicaID: "alice-tablet", publicKey: IdentityTests.replica.publicKey)
        #expect(code.code.hasPrefix("psid1-"))
        #expect(try IdentityCode(code: code.code) == code)
        #expect(try IdentityCode(code: code.code.uppercased()) == code)
        let typo = String(code.code.dropLast()) + (code.code.last == "0" ? "1" : "0")
        #expect(throws: IdentityError.self) { try IdentityCode(code: typo) }
        #expect(throws: IdentityError.self) { try IdentityCode(code: "psc1-abc") }

        let key = ClusterKey.generate()
        let invite = Invite(clusterKey: key, certificate: IdentityTests.vector())
        #expect(invite.code.hasPrefix("psi1-") && Invite.looksLikeInvite(invite.code))
        #expect(!Invite.looksLikeInvite(key.code))
        let read = try Invite(code: invite.code)
        #expect(read.clusterKey == key && read.certificate == IdentityTests.vector())
        #expect(throws: IdentityError.self) { try Invite(code: String(invite.code.dropLast(10))) }
    }
}
