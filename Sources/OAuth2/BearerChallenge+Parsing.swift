import HTTPFields

extension BearerChallenge {
    /// The first `Bearer` or `DPoP` challenge in `values` (the `WWW-Authenticate` field values
    /// in order); nil when there is none or it cannot be read.
    public static func parse(_ values: [String]) -> BearerChallenge? {
        fatalError("contract: built by the OAuth2 helper")
    }
}
