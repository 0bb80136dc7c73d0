import Foundation

/// A subcommand of `peerd-bench`: its flags, declared once, parse its
/// arguments and print its `--help`.
struct Subcommand: Sendable {
    /// `sync`, or empty for the storage benchmark (`peerd-bench [FLAGS]`).
    let name: String
    /// What it measures, printed under its usage line.
    let about: String
    let flags: [Flag]

    init(_ name: String, _ about: String, _ flags: [Flag]) {
        self.name = name
        self.about = about
        self.flags = flags
    }

    /// `peerd-bench sync`.
    var command: String { name.isEmpty ? "peerd-bench" : "peerd-bench \(name)" }

    /// The `--help` text: usage, what it measures, every flag with its default.
    var help: String {
        let usage = flags.map { "[\($0.name)\($0.placeholder.isEmpty ? "" : " \($0.placeholder)")]" }
        return (["usage: \(command) \(usage.joined(separator: " "))", "", about, ""] + flags.map(\.helpLine))
            .joined(separator: "\n")
    }

    /// The flags among `arguments`; throws a `UsageError` for an unknown
    /// flag, a missing or bad value, or a missing required flag, and for `--help`.
    func parse(_ arguments: [String]) throws -> Arguments {
        var given: [String: [String]] = [:]
        var remaining = arguments[...]
        while let word = remaining.popFirst() {
            if word == "--help" || word == "-h" { throw UsageError(help: help) }
            guard let flag = flags.first(where: { $0.name == word }) else {
                throw UsageError("unknown flag \(word)", in: self)
            }
            var value = ""
            if flag.value != .none {
                guard let next = remaining.popFirst() else { throw UsageError("\(word) needs a value", in: self) }
                if let complaint = flag.complaint(about: next) { throw UsageError(complaint, in: self) }
                value = next
            }
            given[word] = flag.repeats ? given[word, default: []] + [value] : [value]
        }
        for flag in flags where flag.required && given[flag.name] == nil {
            throw UsageError("\(flag.name) is required", in: self)
        }
        return Arguments(given: given, flags: flags)
    }
}

/// The flags a subcommand was given, each read as its declared type (its
/// default when it was not given).
struct Arguments: Sendable {
    fileprivate let given: [String: [String]]
    fileprivate let flags: [Flag]

    /// Whether the flag was on the command line.
    func has(_ name: String) -> Bool { given[name] != nil }

    func count(_ name: String) -> Int { Flag.positive(value(name) ?? "") ?? 0 }

    func counts(_ name: String) -> [Int] {
        (value(name) ?? "").split(separator: ",").compactMap { Flag.positive(String($0)) }
    }

    func decimal(_ name: String) -> Double { Double(value(name) ?? "") ?? .nan }

    func text(_ name: String) -> String? { value(name) }

    /// Every value of a flag that repeats, in order.
    func texts(_ name: String) -> [String] { given[name] ?? [] }

    /// `--peerd` made absolute, or the `peerd` next to this executable.
    func peerd() throws -> String {
        try text("--peerd").map(Executable.checked) ?? Executable.beside("peerd")
    }

    private func value(_ name: String) -> String? {
        guard let flag = flags.first(where: { $0.name == name }) else {
            preconditionFailure("\(name) is not a declared flag")
        }
        return given[name]?.last ?? flag.defaultValue
    }
}

/// A command line `peerd-bench` does not take (exit status 2), or `--help` (its text, exit status 0).
struct UsageError: Error, CustomStringConvertible {
    /// The help text, for `--help`; nil for a mistake.
    var help: String?
    var description: String

    init(help: String) {
        self.help = help
        description = help
    }

    init(_ message: String, in subcommand: Subcommand? = nil) {
        let command = subcommand?.command ?? "peerd-bench"
        description = "\(command): \(message) (see `\(command) --help`)"
    }
}
