import Foundation
import Replica
import SyncProtocol

/// The thin-client device tokens an operator issued (`peerd thin-client
/// add NAME`), kept in `DIR/thin-clients` (mode 0600): one line per device,
/// its name and the SHA-256 of its token, so the file never holds a token,
/// and the scopes it may read and write when they are limited
/// (`read=team,alice write=alice`).
///
/// The CLI changes the file with or without a daemon; a running daemon
/// reads it again whenever it changed (`DeviceTokens.Watched`), so an added
/// or removed device counts from its next request.
struct DeviceTokens: Sendable {
    /// One device: its name, and the scopes of the events it may pull and
    /// push (`nil`: every scope).
    struct Device: Sendable, Equatable {
        var name: String
        var readScopes: [String]?
        var writeScopes: [String]?

        func mayRead(_ scope: String) -> Bool { readScopes.map { Self.allows($0, scope) } ?? true }
        func mayWrite(_ scope: String) -> Bool { writeScopes.map { Self.allows($0, scope) } ?? true }

        private static func allows(_ scopes: [String], _ scope: String) -> Bool {
            scopes.contains(scope) || scopes.contains(Certificate.everyScope)
        }
    }

    /// Each device with the hex SHA-256 of its token, in the file's order.
    private(set) var devices: [(device: Device, digest: String)] = []

    /// A device name: letters, digits, `.`, `_` and `-`, 1 to 64 of them.
    static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// The device whose token is `token`, if one was issued.
    func device(withToken token: String) -> Device? {
        let digest = Self.digest(of: token)
        // Every entry is compared, each in constant time, so timing says nothing about the token.
        var found: Device?
        for entry in devices where Self.constantTimeEqual(entry.digest, digest) { found = entry.device }
        return found
    }

    /// Adds a device with a new random token and returns the token.
    mutating func add(_ device: Device) -> String {
        var generator = SystemRandomNumberGenerator()
        let token = "ptc_" + (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        devices.append((device, Self.digest(of: token)))
        return token
    }

    /// Removes a device; false when there is none of that name.
    mutating func remove(_ name: String) -> Bool {
        guard let index = devices.firstIndex(where: { $0.device.name == name }) else { return false }
        devices.remove(at: index)
        return true
    }

    func contains(_ name: String) -> Bool { devices.contains { $0.device.name == name } }

    // MARK: The file

    /// `DIR/thin-clients`.
    static func path(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("thin-clients")
    }

    /// The tokens in `path`; none when the file does not exist.
    static func read(from path: String) throws -> DeviceTokens {
        guard FileManager.default.fileExists(atPath: path) else { return DeviceTokens() }
        guard let data = FileManager.default.contents(atPath: path), let text = String(validating: data, as: UTF8.self)
        else {
            throw CommandError("cannot read the thin-client tokens in \(path)")
        }
        var tokens = DeviceTokens()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            let fields = line.split(separator: " ")
            let bad = CommandError(
                "\(path):\(number + 1): expected `NAME SHA256-HEX [read=SCOPES] [write=SCOPES]`; fix or remove the line"
            )
            guard fields.count >= 2, isValidName(String(fields[0])), fields[1].utf8.count == 64 else { throw bad }
            var device = Device(name: String(fields[0]))
            for field in fields.dropFirst(2) {
                let scopes = field.drop { $0 != "=" }.dropFirst().split(separator: ",").map(String.init)
                if field.hasPrefix("read="), device.readScopes == nil {
                    device.readScopes = scopes
                } else if field.hasPrefix("write="), device.writeScopes == nil {
                    device.writeScopes = scopes
                } else {
                    throw bad
                }
            }
            tokens.devices.append((device, String(fields[1])))
        }
        return tokens
    }

    /// Writes the file (mode 0600) through a temporary file and a rename, so
    /// a daemon reading it sees the old or the new list, never half of one.
    func write(to path: String) throws {
        let text = devices.map { entry in
            var line = "\(entry.device.name) \(entry.digest)"
            if let read = entry.device.readScopes { line += " read=" + read.joined(separator: ",") }
            if let write = entry.device.writeScopes { line += " write=" + write.joined(separator: ",") }
            return line + "\n"
        }.joined()
        let temporary = path + ".tmp"
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw CommandError("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw CommandError("cannot replace \(path): \(reason)")
        }
    }

    private static func digest(of token: String) -> String {
        var hash = SHA256()
        hash.update(token)
        return hash.finalizeHex()
    }

    private static func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}

extension DeviceTokens {
    /// The daemon's view of the file: read again when its inode, size or
    /// modification time changed, so the CLI's changes count without a
    /// restart. A file that cannot be read counts as no devices, so a
    /// broken file never lets a device in (`peerd thin-client list` says
    /// what is wrong with it).
    final class Watched: @unchecked Sendable {
        // `@unchecked Sendable`: `current` and `stamp` are only touched with `lock` held.
        private let path: String
        private let lock = NSLock()
        private var current = DeviceTokens()
        private var stamp: [Int64]?

        init(path: String) { self.path = path }

        /// The device whose token is `token`, reading the file again first if it changed.
        func device(withToken token: String) -> Device? {
            lock.withLock {
                var info = stat()
                let now: [Int64]? =
                    stat(path, &info) == 0
                    ? [
                        Int64(info.st_ino), Int64(info.st_size), Int64(info.st_mtim.tv_sec),
                        Int64(info.st_mtim.tv_nsec),
                    ]
                    : nil
                if now != stamp {
                    current = (try? DeviceTokens.read(from: path)) ?? DeviceTokens()
                    stamp = now
                }
                return current.device(withToken: token)
            }
        }
    }
}
