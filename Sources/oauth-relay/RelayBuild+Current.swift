internal import CRelayBuild
import OAuth2

extension RelayBuild {
    /// This binary's version and the commit it was built from (CRelayBuild, set by Package.swift).
    static let current = RelayBuild(commit: String(cString: oauth_relay_build_commit()))
}
