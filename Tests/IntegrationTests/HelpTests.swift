import Foundation
import TestSupport
import Testing

/// `peerd COMMAND --help` for every command `peerd --help` lists, the
/// commands of groups (`peerd domain declare`, `peerd thin-client add`)
/// included: its options list names every flag and option the command
/// accepts, and the usage line names them too.
@Suite("peerd COMMAND --help lists every option")
struct HelpTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// One entry of a help's `Options:` list.
    struct Listed: CustomStringConvertible {
        var name: String
        /// Whether it is shown with a value (`--data DIR`), not as a flag.
        var takesValue: Bool
        var description: String { "--\(name)" + (takesValue ? " VALUE" : "") }
    }

    /// The command paths of `peerd --help`'s `Commands:` list: the leading
    /// words of each usage line (`item create NAME QTY …` is `item create`).
    func commandPaths() throws -> [[String]] {
        let overview = try Executables.run("peerd", ["--help"])
        try #require(overview.status == 0, "\(overview)")
        let lines = overview.stdout.split(separator: "\n").drop { $0 != "Commands:" }.dropFirst()
        return lines.prefix { $0.hasPrefix("  ") }.map { line in
            line.split(separator: " ").prefix { word in
                word.allSatisfy { $0.isLowercase || $0 == "-" } && word.first != "-"
            }
            .map(String.init)
        }
    }

    /// The `Options:` list of a help text.
    func listed(in help: String) -> [Listed] {
        help.split(separator: "\n").drop { $0 != "Options:" }.dropFirst().compactMap { line in
            // `  --name PLACEHOLDER  what it does`: two spaces end the option's spelling.
            let trimmed = line.drop { $0 == " " }
            let spelled = trimmed.range(of: "  ").map { trimmed[..<$0.lowerBound] } ?? trimmed
            let words = spelled.split(separator: " ")
            guard let first = words.first, first.hasPrefix("--") else { return nil }
            return Listed(name: String(first.dropFirst(2)), takesValue: words.count > 1)
        }
    }

    /// The `--name` words of a usage line.
    func named(inUsage usage: Substring) -> Set<String> {
        Set(
            usage.split(whereSeparator: { " []()|".contains($0) }).filter { $0.hasPrefix("--") }
                .map { String($0.dropFirst(2).prefix { $0 != "=" }) })
    }

    @Test("every command's help lists what its usage names, and the parser accepts every listed option")
    func everyOptionIsListed() throws {
        let paths = try commandPaths()
        // Every command, and the commands of the groups the issue named.
        #expect(paths.count > 30, "\(paths)")
        for expected in [["domain", "declare"], ["entity", "list"], ["thin-client", "add"], ["session"], ["run"]] {
            #expect(paths.contains(expected), "peerd --help does not list \(expected)")
        }
        let data = temp.path("none")
        for path in paths {
            let name = path.joined(separator: " ")
            let result = try Executables.run("peerd", path + ["--help"])
            try #require(result.status == 0, "peerd \(name) --help: \(result)")
            let usage = try #require(
                result.stdout.split(separator: "\n").first { $0.hasPrefix("usage: peerd \(name)") },
                "peerd \(name) --help: \(result.stdout)")
            let listed = listed(in: result.stdout)
            let listedNames = Set(listed.map(\.name))
            for shared in ["data", "help"] {
                #expect(listedNames.contains(shared), "peerd \(name) --help does not list --\(shared)")
            }
            // The usage line and the options list agree: an option left out of either is a bug.
            let inUsage = named(inUsage: usage.dropFirst("usage: peerd".count))
            #expect(
                inUsage.subtracting(listedNames).isEmpty,
                "peerd \(name) --help: the usage names \(inUsage.subtracting(listedNames).sorted()), the options list does not"
            )
            let unnamed = listedNames.subtracting(inUsage).subtracting(["data", "config", "help"])
            #expect(
                unnamed.isEmpty, "peerd \(name) --help lists \(unnamed.sorted()), its usage line does not name them")
            // Every listed option is one the command's parser takes, as listed: a flag refuses a value
            // and an option wants one (both refused before the command runs).
            for option in listed where option.name != "help" {
                let probe = option.takesValue ? ["--\(option.name)"] : ["--\(option.name)=1"]
                let refused = try Executables.run("peerd", path + ["--data", data] + probe)
                let expected = option.takesValue ? "--\(option.name) needs a value" : "--\(option.name) takes no value"
                #expect(
                    refused.stderr.hasPrefix("peerd: \(expected)"),
                    "peerd \(name) lists \(option) in its help, and its parser says: \(refused.stderr)")
            }
        }
    }

    @Test("peerd run --help lists each option once, with its value and what the shared ones do")
    func runHelpShowsValues() throws {
        let help = try Executables.run("peerd", ["run", "--help"])
        #expect(help.status == 0)
        let options = help.stdout.split(separator: "\n").drop { $0 != "Options:" }.dropFirst().map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        for spelled in ["--listen HOST:PORT", "--peer HOST:PORT", "--topology auto|mesh|hub", "--no-mdns", "--relay"] {
            #expect(
                options.filter { $0.hasPrefix(spelled + " ") || $0 == spelled }.count == 1, "\(spelled): \(options)")
        }
        #expect(options.contains { $0.hasPrefix("--peer HOST:PORT") && $0.hasSuffix("may be given more than once") })
        #expect(options.contains { $0.hasPrefix("--config FILE") })
        let items = try Executables.run("peerd", ["items", "--help"])
        #expect(
            items.stdout.split(separator: "\n").contains { $0.hasPrefix("  --json ") && $0.hasSuffix("  print JSON") },
            "\(items.stdout)")
    }
}
