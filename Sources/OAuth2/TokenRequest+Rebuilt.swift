extension TokenRequest {
    /// The same request made with `identity`'s credentials: the identity as its credential files
    /// hold it now (`Identity.withCredential`), where the request was built with the one loaded.
    /// The grant of a non-interactive identity is made again (its password, seed refresh token,
    /// assertion or subject token may be what changed); any other request — a refresh, a code
    /// exchange, a device poll, a device authorization, a revocation — keeps its own fields and
    /// takes the identity's client authentication, `params` and headers. Call it before
    /// `withClientAssertion` and `withDPoPProof`, which sign what it returns.
    public func rebuilt(for identity: Identity) -> TokenRequest {
        if case .grant(let type) = purpose, !type.isInteractive, let request = TokenRequest.grant(for: identity, at: url) {
            return request
        }
        return TokenRequest(purpose: purpose, form: builtForm, identity: identity, url: url, tokenEndpoint: tokenEndpoint)
    }
}
