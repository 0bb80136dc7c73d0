import Foundation

/// The live progress line on standard error: rewritten in place on a
/// terminal, else one line every five seconds (a log stays readable).
public final class ProgressLine {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPrinted = ContinuousClock.now - .seconds(10)
    private var shown = false

    public init() {}

    /// Shows `text` as the current state.
    func update(_ text: String) {
        if isTerminal {
            write("\r" + text + "\u{1B}[K")
            shown = true
        } else if ContinuousClock.now - lastPrinted >= .seconds(5) {
            write(text + "\n")
            lastPrinted = ContinuousClock.now
        }
    }

    /// Ends the line, so that what follows starts on a line of its own.
    func finish() {
        if shown { write("\n") }
        shown = false
    }

    /// Prints `text` on a line of its own.
    public func say(_ text: String) {
        finish()
        write(text + "\n")
    }

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}
