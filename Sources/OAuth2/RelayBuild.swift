import SafeText

/// What a binary is: its version (`RelayVersion.number`) and the git commit it was built from,
/// which the build sets ("unknown" when it did not: Package.swift's `buildCommit`). The executable
/// makes the one value (`RelayBuild.current`, from CRelayBuild) and hands it to what shows it.
public struct RelayBuild: Sendable, Equatable {
    /// The commit of a build that was not told its commit.
    public static let unknownCommit = "unknown"

    public let version: String
    public let commit: String

    public init(version: String = RelayVersion.number, commit: String) {
        self.version = version
        self.commit = commit
    }

    /// `oauth-relay 0.1.0 (commit 0123…)`: what `oauth-relay --version` prints.
    public var versionLine: String { "oauth-relay \(version) (commit \(commit))" }

    /// `{"version":"0.1.0","commit":"0123…"}`: the admin listener's `GET /version`.
    public var json: String { "{\"version\":\(JSONText.quote(version)),\"commit\":\(JSONText.quote(commit))}" }
}
