import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// A vouch for unsigned history (docs/identity.md "Vouching for unsigned
/// history"): a certificate of the unsigned origin with the voucher's key,
/// which names the voucher and is never an identity.
@Suite struct AdoptionTests {
    let admin = IdentityTests.admin
    let voucher = IdentityTests.replica

    @Test func aVouchNamesItsVoucherAndReadsBackFromItsBytes() throws {
        let vouch = Certificate.adoption(
            by: admin, voucher: voucher.publicKey, voucherID: "gateway-1", origin: "legacy-7",
            scopes: ["team", "default", "team"], issuedMs: IdentityTests.issuedMs)
        let read = try Certificate(bytes: vouch.bytes)
        #expect(read.vouchedBy == "gateway-1" && read.replicaID == "legacy-7")
        #expect(read.writeScopes == ["default", "team"] && read.expiresMs == nil)
        #expect(read.publicKey == voucher.publicKey && !read.isSelfSigned)
        #expect(read.mayWrite("team") && !read.mayWrite("other"))
        // A replica's own certificate names no voucher.
        #expect(IdentityTests.vector().vouchedBy == nil)
    }

    @Test func anOpenClustersVouchIsSelfSignedAndItsTrustKeepsIt() {
        let vouch = Certificate.adoption(
            by: voucher, voucher: voucher.publicKey, voucherID: "gateway-1", origin: "legacy-7", scopes: ["default"],
            issuedMs: 1)
        #expect(vouch.isSelfSigned)
        var node = SyncNode(
            configuration: SyncNode.Configuration(hello: Hello(replicaID: "b", listenPort: 1)), cursor: [:])
        _ = node.learnStored([vouch], now: 0)
        #expect(node.knownCertificates.contains(vouch))
    }

    @Test func aHelloThatShowsAVouchAsItsIdentityIsRefused() {
        let vouch = Certificate.adoption(
            by: admin, voucher: voucher.publicKey, voucherID: "gateway-1", origin: "legacy-7", scopes: ["default"],
            issuedMs: IdentityTests.issuedMs)
        let binding = [UInt8](repeating: 5, count: 32)
        let identity = PeerIdentity.proving(voucher, certificate: vouch, binding: binding, role: .initiator)
        #expect(throws: IdentityError.adoptionShownAsIdentity(replicaID: "legacy-7", voucher: "gateway-1")) {
            try IdentityTests.trust().admit(identity, replicaID: "legacy-7", binding: binding, role: .initiator)
        }
    }
}
