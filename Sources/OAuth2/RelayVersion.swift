/// The relay's version, as it names itself to the servers it calls: GitHub's REST API refuses a
/// request without a `User-Agent`, and asks for one that names the application.
///
/// `number` is the one place the version is written: `--version`, `GET /version`, the start-up log
/// line and the Makefile's release artifacts (file names, the .deb's Version) all read it, the
/// Makefile through the built binary's `--version`.
public enum RelayVersion {
    public static let number = "0.1.0"

    /// `oauth-relay/<version>`.
    public static var userAgent: String { "oauth-relay/\(number)" }
}
