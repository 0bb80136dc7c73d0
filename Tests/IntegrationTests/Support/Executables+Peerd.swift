import Foundation
import TestSupport

extension Executables {
    /// Runs `peerd` against a data directory.
    static func peerd(_ arguments: [String], data: URL) throws -> ProcessResult {
        try run("peerd", arguments + ["--data", data.path])
    }
}
