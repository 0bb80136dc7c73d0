import Foundation

/// What the demo prints: headings, the commands it runs (`$ peerd ...`) and
/// their output, unbuffered so that it keeps its order in a pipe.
enum DemoConsole {
    /// Bold only on a terminal.
    private static let bold = isatty(STDOUT_FILENO) == 1

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
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
