import Gossip

/// `peerd cluster-code`: what another device needs to join this cluster.
enum ClusterCommands {
    static let all: [Command] = [
        Command(
            path: ["cluster-code"], usage: "cluster-code",
            summary: """
                Prints this cluster's share code on one line. On another device, `peerd init --join CODE` makes a \
                replica of the same cluster. Anyone with the code can join and read everything: share it like a \
                password.
                """
        ) { arguments, directory in
            _ = try arguments.positional()
            print(try directory.readClusterKey().code)
        }
    ]
}
