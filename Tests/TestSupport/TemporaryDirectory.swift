import Foundation

/// A fresh directory under the system temporary directory, removed with
/// everything in it when the last reference goes away.
///
/// Hold it in a suite's stored property: Swift Testing makes one suite
/// instance per test, so every test gets its own directory, and it lives
/// until the test has returned (and closed its databases).
///
/// ```swift
/// struct StorageTests {
///     let directory: TemporaryDirectory
///     init() throws { directory = try TemporaryDirectory() }
///
///     @Test func opens() throws { _ = try EventLog.create(at: directory.path("a.db"), replicaID: "a") }
/// }
/// ```
public final class TemporaryDirectory {
    /// The directory.
    public let url: URL

    /// Creates the directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("peersync-tests-\(UUID().uuidString.lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// The URL of `name` inside the directory.
    public func url(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }
}
