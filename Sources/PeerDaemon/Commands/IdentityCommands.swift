import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd admin-key`, `peerd identity` and `peerd invite`: a cluster's admin
/// key, a replica's identity code, and the certificate an admin signs for it
/// (docs/identity.md).
enum IdentityCommands {
    static let all: [Command] = [
        Command(
            path: ["admin-key"], usage: "admin-key --out FILE",
            summary: """
                Creates a cluster admin key in FILE (mode 0600; refuses to overwrite one) and prints its public \
                key. Keep it off the devices: only `peerd invite` needs it.
                """,
            options: ["out"]
        ) { arguments, _ in
            _ = try arguments.positional()
            guard let file = arguments.options["out"] else { throw UsageError("missing --out FILE") }
            let key = SigningKey.generate()
            do {
                try key.write(toFile: file)
            } catch let error as KeyFileError {
                throw CommandError("\(error)")
            }
            print("admin key \(Hex.string(key.publicKey)) in \(file)")
        },
        Command(
            path: ["identity"], usage: "identity",
            summary: """
                Prints this replica's identity code on one line: its replica id and identity public key. An admin \
                turns it into an invite with `peerd invite --for CODE`.
                """
        ) { arguments, directory in
            _ = try arguments.positional()
            let replicaID = try directory.openLog().replicaID
            print(IdentityCode(replicaID: replicaID, publicKey: try directory.identityKey().publicKey).code)
        },
        Command(
            path: ["invite"],
            usage: "invite --admin-key FILE --for IDENTITY --read SCOPES --write SCOPES [--expires WHEN]",
            summary: """
                Signs a certificate for the replica whose `peerd identity` printed IDENTITY and prints an invite \
                code: this data directory's cluster key and the certificate. On that replica, `peerd init --join \
                CODE` installs both. SCOPES is a comma-separated list of feed scopes (\"\" for none). \
                WHEN is a duration from now (90m, 12h, 30d) or a time (2027-06-30T00:00:00Z); without --expires \
                the certificate does not expire. The code holds the cluster key: share it like a password.
                """,
            options: ["admin-key", "for", "read", "write", "expires"]
        ) { arguments, directory in
            _ = try arguments.positional()
            func required(_ name: String, _ value: String) throws -> String {
                guard let given = arguments.options[name] else { throw UsageError("missing --\(name) \(value)") }
                return given
            }
            let adminFile = try required("admin-key", "FILE")
            let identity: IdentityCode
            do {
                identity = try IdentityCode(code: try required("for", "IDENTITY"))
            } catch let error as IdentityError {
                throw UsageError.badValue(
                    arguments.options["for"] ?? "", of: "for", "needs an identity code (\(error))")
            }
            let read = try scopes(try required("read", "SCOPES"), option: "read")
            let write = try scopes(try required("write", "SCOPES"), option: "write")
            let nowMs = TrustPolicy.systemClockMs()
            let expiresMs = try arguments.options["expires"].map { try expiry($0, nowMs: nowMs) }
            let admin: SigningKey
            do {
                admin = try SigningKey.read(fromFile: adminFile)
            } catch let error as KeyFileError {
                throw CommandError("--admin-key: \(error)")
            }
            let certificate = Certificate.issue(
                by: admin, for: identity.publicKey, replicaID: identity.replicaID, read: read, write: write,
                issuedMs: nowMs, expiresMs: expiresMs)
            print(Invite(clusterKey: try directory.readClusterKey(), certificate: certificate).code)
        },
        Command(
            path: ["retire"], usage: "retire --replica ID [--admin-key FILE]",
            summary: """
                Retires the device ID for good, so that its missing acknowledgement of a checkpoint no longer \
                keeps the history (docs/operations.md "Dropping history"). In a certified cluster the admin \
                retires it with a revocation, exactly as `peerd revoke` (give --admin-key FILE): every replica \
                learns it and no longer waits for ID. In an open cluster, where nobody signs for the cluster, \
                each replica's operator retires ID on that replica (through its daemon when one runs; kept in \
                DIR/retired). Prints what it did.
                """,
            options: ["admin-key", "replica"]
        ) { arguments, directory in
            _ = try arguments.positional()
            guard let replicaID = arguments.options["replica"], !replicaID.isEmpty else {
                throw UsageError("missing --replica ID")
            }
            try directory.requireReplica()
            if try directory.certificate() != nil {
                guard arguments.options["admin-key"] != nil else {
                    throw UsageError(
                        "this replica is in a certified cluster: the admin retires ID with --admin-key FILE")
                }
                try revoke(arguments, directory)
                return
            }
            try directory.retire(replicaID)
            if case .daemon(let api) = try ReplicaAccess.of(directory) {
                let body = String(decoding: try JSONEncoder().encode(["replica": replicaID]), as: UTF8.self)
                _ = try api.call("POST", "/retired", body: body)
            }
            print("retired \(replicaID): its acknowledgement of checkpoints is no longer awaited here")
        },
        Command(
            path: ["revoke"], usage: "revoke --admin-key FILE --replica ID",
            summary: """
                Revokes the replica ID: signs a revocation with the admin key and installs it in this replica \
                (through its daemon when one runs, else into DIR/revocations for the next start). Every replica \
                of the cluster learns it from its peers, ends its connections to ID and refuses its hello and \
                its later events; what they stored of ID before stays. Prints the revocation code.
                """,
            options: ["admin-key", "replica"]
        ) { arguments, directory in
            _ = try arguments.positional()
            try revoke(arguments, directory)
        },
    ]

    /// `peerd revoke` (and `peerd retire` in a certified cluster).
    private static func revoke(_ arguments: Arguments, _ directory: DataDirectory) throws {
        guard let adminFile = arguments.options["admin-key"] else { throw UsageError("missing --admin-key FILE") }
        guard let replicaID = arguments.options["replica"], !replicaID.isEmpty else {
            throw UsageError("missing --replica ID")
        }
        try directory.requireReplica()
        let admin: SigningKey
        do {
            admin = try SigningKey.read(fromFile: adminFile)
        } catch let error as KeyFileError {
            throw CommandError("--admin-key: \(error)")
        }
        guard let certificate = try directory.certificate(), certificate.adminKey == admin.publicKey else {
            throw CommandError(
                "\(directory.path) holds no certificate from this admin key; a revocation takes effect only in "
                    + "the certified cluster of that key (docs/identity.md)")
        }
        let access = try ReplicaAccess.of(directory)
        if let earlier = try revokedAt(replicaID, access) {
            print("replica \(replicaID) was already revoked at \(IdentityError.time(earlier))")
            return
        }
        let revocation = Revocation.issue(by: admin, replicaID: replicaID, revokedMs: TrustPolicy.systemClockMs())
        switch access {
        case .daemon(let api):
            _ = try api.call("POST", "/revocations", body: "{\"revocation\":\"\(revocation.code)\"}")
        case .files(let directory):
            try directory.store([revocation])
        }
        print(revocation.code)
        if replicaID == (try? directory.openLog().replicaID) {
            FileHandle.standardError.write(
                Data("note: \(replicaID) is this directory's own replica; its peers refuse it from now on\n".utf8))
        }
    }

    /// When the replica DIR knows as revoked was revoked, if it is.
    private static func revokedAt(_ replicaID: String, _ access: ReplicaAccess) throws -> UInt64? {
        switch access {
        case .daemon(let api):
            let status = try JSONDecoder().decode(DaemonStatus.self, from: Data(try api.call("GET", "/status").utf8))
            return status.revoked.first { $0.replica_id == replicaID }?.revoked_ms
        case .files(let directory):
            return try directory.revocations().first { $0.replicaID == replicaID }?.revokedMs
        }
    }

    /// `team,alice` → `["team", "alice"]`; `""` → none.
    static func scopes(_ text: String, option: String) throws -> [String] {
        let scopes = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if scopes == [""] { return [] }
        guard !scopes.contains("") else {
            throw UsageError.badValue(text, of: option, "needs scope names separated by commas")
        }
        // `peersync/…` names are the protocol's (a vouch's read scope, docs/identity.md).
        if let reserved = scopes.first(where: { $0.hasPrefix("peersync/") }) {
            throw UsageError.badValue(
                text, of: option, "names \(reserved); scopes beginning with peersync/ are reserved")
        }
        return Array(Set(scopes)).sorted()
    }

    /// `30d`, `12h`, `90m`, `45s` from now, or an ISO 8601 time; later than now.
    static func expiry(_ text: String, nowMs: UInt64) throws -> UInt64 {
        let units: [Character: UInt64] = ["s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]
        let expected = "needs a duration (90m, 12h, 30d) or a time (2027-06-30T00:00:00Z)"
        let whenMs: UInt64
        if let unit = text.last.flatMap({ units[$0] }), let count = UInt64(text.dropLast()), count > 0 {
            let (span, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, span <= UInt64(Int64.max) - nowMs else {
                throw UsageError.badValue(text, of: "expires", "is too far in the future")
            }
            whenMs = nowMs + span
        } else if let date = ISO8601DateFormatter().date(from: text) {
            guard date.timeIntervalSince1970 * 1000 > Double(nowMs) else {
                throw UsageError.badValue(text, of: "expires", "needs a time in the future")
            }
            whenMs = UInt64(date.timeIntervalSince1970 * 1000)
        } else {
            throw UsageError.badValue(text, of: "expires", expected)
        }
        return whenMs
    }
}
