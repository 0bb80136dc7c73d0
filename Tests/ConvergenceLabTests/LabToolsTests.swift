import Foundation
import NetworkLab
import Testing

/// Where `peerd-lab` finds what it runs: beside itself, an install's
/// `../share/peersync/`, `PATH`; a missing program is named with what makes it.
struct LabToolsTests {
    static func tools(_ present: Set<String>, netlab: String? = nil) -> LabTools {
        LabTools(
            directory: URL(fileURLWithPath: "/opt/lab/bin"), path: ["/usr/local/bin", "/usr/bin"],
            netlabVariable: netlab, isExecutable: { present.contains($0) })
    }

    @Test("an executable beside peerd-lab wins over PATH; PATH is the fallback")
    func executablesBesideThenPath() throws {
        #expect(
            try Self.tools(["/opt/lab/bin/peerd", "/usr/bin/peerd"]).executable("peerd", builtBy: "x")
                == "/opt/lab/bin/peerd")
        #expect(try Self.tools(["/usr/bin/peerd"]).executable("peerd", builtBy: "x") == "/usr/bin/peerd")
    }

    @Test("a missing executable names the command that builds it")
    func missingExecutableNamesItsBuild() {
        #expect {
            try Self.tools([]).executable("peerd-lab-link", builtBy: "`swift build --product peerd-lab-link`")
        } throws: { error in
            "\(error)".contains("`swift build --product peerd-lab-link`") && "\(error)".contains("/opt/lab/bin")
        }
    }

    @Test("netlab.sh: --netlab, else $PEERSYNC_NETLAB, else beside, the build's resources, ../share/peersync, PATH")
    func netlabOrder() throws {
        let all: Set<String> = [
            "/opt/lab/bin/PeerSync_NetworkLab.resources/netlab.sh", "/opt/lab/share/peersync/netlab.sh",
            "/usr/bin/netlab.sh",
        ]
        #expect(try Self.tools(all.union(["/x/netlab.sh"])).netlabScript(option: "/x/netlab.sh") == "/x/netlab.sh")
        #expect(Self.tools(all, netlab: "/env/netlab.sh").netlabCandidates(option: nil) == ["/env/netlab.sh"])
        #expect(
            try Self.tools(all).netlabScript(option: nil) == "/opt/lab/bin/PeerSync_NetworkLab.resources/netlab.sh")
        #expect(
            try Self.tools(["/opt/lab/share/peersync/netlab.sh", "/usr/bin/netlab.sh"]).netlabScript(option: nil)
                == "/opt/lab/share/peersync/netlab.sh")
        #expect(try Self.tools(["/usr/bin/netlab.sh"]).netlabScript(option: nil) == "/usr/bin/netlab.sh")
        #expect(throws: LabToolMissing.self) { try Self.tools(all).netlabScript(option: "/missing/netlab.sh") }
    }
}
