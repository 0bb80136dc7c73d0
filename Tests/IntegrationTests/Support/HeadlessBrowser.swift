import Foundation
import TestSupport

/// Debian's `chromium`, headless, to open an HTML file as a person would
/// and see what it draws: a screenshot, or the DOM after it loaded.
/// `scripts/setup.sh` installs it; tests that need it are disabled with
/// ``unavailableReason`` when it is missing.
///
/// ```swift
/// let browser = try HeadlessBrowser()
/// try await browser.screenshot(of: html, to: png, width: 1400, height: 1000)
/// let dom = try await browser.dom(of: html)
/// ```
struct HeadlessBrowser {
    /// Where Debian's package puts it.
    static let candidates = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"]

    /// Why no browser can run here, or nil when one can.
    static let unavailableReason: String? =
        candidates.contains(where: FileManager.default.isExecutableFile)
        ? nil : "needs Debian's chromium (scripts/setup.sh installs it with apt)"

    /// The longest one page may take: a few seconds alone, but CI runs it beside daemons on two cores.
    static let timeout: Duration = .seconds(180)

    let executable: URL

    init() throws {
        guard let path = Self.candidates.first(where: FileManager.default.isExecutableFile) else {
            throw ChildProcessError(Self.unavailableReason ?? "no chromium")
        }
        executable = URL(fileURLWithPath: path)
    }

    /// Renders `html` in a window of `width` × `height` CSS pixels and writes what it shows to `png`.
    func screenshot(of html: URL, to png: URL, width: Int, height: Int) async throws {
        let result = try await run([
            "--hide-scrollbars", "--screenshot=\(png.path)", "--window-size=\(width),\(height)", html.absoluteString,
        ])
        guard result.status == 0, FileManager.default.fileExists(atPath: png.path) else {
            throw ChildProcessError("chromium wrote no screenshot of \(html.path)\n\(result)")
        }
    }

    /// The DOM of `html` once loaded, serialized as HTML.
    func dom(of html: URL) async throws -> String {
        let result = try await run(["--dump-dom", html.absoluteString])
        guard result.status == 0, !result.stdout.isEmpty else {
            throw ChildProcessError("chromium dumped no DOM of \(html.path)\n\(result)")
        }
        return result.stdout
    }

    /// Runs chromium headless (as root it needs `--no-sandbox`) with a profile of its own that goes afterwards.
    private func run(_ arguments: [String]) async throws -> ProcessResult {
        let profile = try TemporaryDirectory()
        let result = try await ChildProcess.run(
            executable,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--user-data-dir=\(profile.url.path)",
            ] + arguments,
            timeout: Self.timeout)
        withExtendedLifetime(profile) {}  // chromium has exited: its profile may go now
        return result
    }
}
