import Foundation

/// What the demo prints: headings, the commands it runs (`$ peerd ...`) and
/// their output, unbuffered so that it keeps its order in a pipe.
enum DemoConsole {
    /// Bold only on a terminal.
    private static let bold = isatty(STDOUT_FILENO) == 1

    /// Writes straight to the descriptor. When the reader went away (a pipe
    /// into `head`), the demo stops as on Ctrl-C: SIGTERM starts the
    /// cleanup, which stops the daemons and exits, and this thread waits.
    static func line(_ text: String) {
        guard written(text + "\n") else {
            raise(SIGTERM)
            DispatchSemaphore(value: 0).wait()
            return
        }
    }

    /// A line that may be lost: for the cleanup, which runs whether or not
    /// anyone still reads.
    static func lastWords(_ text: String) {
        _ = written(text + "\n")
    }

    private static func written(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let count = bytes[done...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            guard count > 0 else { return false }
            done += count
        }
        return true
    }

    /// `text` as it came from a command: printed when not empty, with one newline.
    static func output(_ text: String) {
        let trimmed = text.hasSuffix("\n") ? String(text.dropLast()) : text
        if !trimmed.isEmpty { line(trimmed) }
    }

    /// A step of the story: `== text`, after a blank line.
    static func heading(_ text: String) {
        line(bold ? "\n\u{1B}[1m== \(text)\u{1B}[0m" : "\n== \(text)")
    }

    /// `$ peerd WORDS`, each word quoted as a shell needs it; `&` for a
    /// command that keeps running in the background.
    static func command(_ words: [String], background: Bool = false) {
        line("$ peerd " + words.map(shellWord).joined(separator: " ") + (background ? " &" : ""))
    }

    private static func shellWord(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=@+,".contains($0) }
        return plain && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
