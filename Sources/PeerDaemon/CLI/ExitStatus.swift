/// The exit statuses of `peerd` (docs/cli.md, "Exit statuses").
enum ExitStatus {
    /// A failure: what was asked could not be done; the line on stderr says why.
    static let failure: Int32 = 1
    /// A mistake on the command line of any command but `peerd run`.
    static let usage: Int32 = 2
    /// `peerd run` cannot start with its configuration: a mistake on its
    /// command line or in its config file, or a data directory, key,
    /// certificate or token file it cannot use. sysexits' `EX_CONFIG`; the
    /// systemd unit's `RestartPreventExitStatus=78` keeps a restart, which
    /// cannot fix it, from looping.
    static let configuration: Int32 = 78
}

/// A setting `peerd run` cannot start with, found before it is ready (no
/// replica in DIR, a damaged certificate, an unreadable token file): printed
/// as one line; exit code 78 (``ExitStatus/configuration``).
struct StartupConfigurationError: Error, CustomStringConvertible {
    let description: String
}
