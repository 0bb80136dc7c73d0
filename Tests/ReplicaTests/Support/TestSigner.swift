import CSodium
import Replica

/// An Ed25519 key pair for tests of signed data (libsodium directly, as
/// the Replica module verifies with it).
struct TestSigner {
    let publicKey: [UInt8]
    private let secretKey: [UInt8]

    static func generate() -> TestSigner {
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        precondition(sodium_init() >= 0 && crypto_sign_keypair(&publicKey, &secretKey) == 0)
        return TestSigner(publicKey: publicKey, secretKey: secretKey)
    }

    func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey)
        return signature
    }
}
