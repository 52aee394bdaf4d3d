import Endpoints

extension TokenRequest {
    /// RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.5): the code a browser login brought back, the
    /// verifier of the challenge the authorization request sent, and the same redirect URI.
    public static func authorizationCode(for identity: Identity, code: Secret, verifier: Secret, redirectUri: String,
                                         at tokenEndpoint: HTTPURL) -> TokenRequest {
        var form = TokenForm(grantType: GrantType.authorizationCode.grantType)
        form.add("code", code)
        form.add("redirect_uri", redirectUri)
        form.add("code_verifier", verifier)
        return TokenRequest(purpose: .authorizationCode, form: form, identity: identity, url: tokenEndpoint)
    }
}
