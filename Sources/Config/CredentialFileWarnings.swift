import OAuth2

extension RelayConfig {
    /// What `check` and `run` warn of: a credential file holding a JWT whose `exp` has passed at
    /// `unixTime` (a projected token the platform no longer rotates, a copy made for a test). Not
    /// an error: the platform may write the next one before the first token request, and the
    /// relay reads it again then (token requests fail while it has not).
    public func expiredCredentialWarnings(at unixTime: Double) -> [String] {
        identities.keys.sorted().flatMap { name in
            identities[name]!.expiredCredentials(at: unixTime).map { expired in
                "\(JSONPath.root.key("identities").key(name).key(expired.file.key)): \(expired)"
            }
        }
    }
}
