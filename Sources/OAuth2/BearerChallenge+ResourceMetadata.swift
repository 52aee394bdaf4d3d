extension BearerChallenge {
    /// RFC 9728 §5.1's `resource_metadata` of the first challenge in `values` (the
    /// `WWW-Authenticate` field values in order) that has one, whatever its scheme: a resource
    /// may put it on its `DPoP` challenge, or on a `Bearer` one after another scheme's. A
    /// challenge that breaks the syntax is skipped (as `parse` does). Nil when none has one.
    public static func resourceMetadataURL(in values: [String]) -> String? {
        resourceMetadataChallenge(in: values)?.resourceMetadata
    }

    /// The first challenge in `values` with a `resource_metadata`, of any scheme, read as
    /// `parse` reads a `Bearer` one (its `scope` is the one that goes with that metadata; none
    /// when it is not a list of RFC 6749 §3.3 scope tokens).
    static func resourceMetadataChallenge(in values: [String]) -> BearerChallenge? {
        for value in values {
            for challenge in ChallengeList.challenges(in: value) where !challenge.broken {
                guard let link = challenge.parameters["resource_metadata"] else { continue }
                let scope = scopeTokens(challenge.parameters["scope"]) ?? []
                return BearerChallenge(scheme: challenge.scheme, realm: challenge.parameters["realm"], resourceMetadata: link,
                                       scope: scope)
            }
        }
        return nil
    }
}
