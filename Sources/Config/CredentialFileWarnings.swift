import OAuth2

extension RelayConfig {
    /// What `check` and `run` warn of: a credential file holding a JWT whose `exp` has passed at
    /// `unixTime` (a projected token the platform no longer rotates, a copy made for a test). Not
    /// an error: the platform may write the next one before the first token request, and the
    /// relay reads it again then (token requests fail while it has not). The identities made for
    /// `"identity": "auto"` routes share the `auto` object's files: one warning each.
    public func expiredCredentialWarnings(at unixTime: Double) -> [String] {
        var warnings: [String] = []
        for name in identities.keys.sorted() {
            let identity = identities[name]!
            let owner = identity.auto == nil ? JSONPath.root.key("identities").key(name) : JSONPath.root.key("auto")
            for expired in identity.expiredCredentials(at: unixTime) {
                let warning = "\(owner.key(expired.file.key)): \(expired)"
                if !warnings.contains(warning) { warnings.append(warning) }
            }
        }
        return warnings
    }
}
