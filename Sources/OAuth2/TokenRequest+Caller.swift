import Endpoints
import SafeText

extension TokenRequest {
    /// The request that exchanges `callerToken`, a caller's bearer token, for a token of
    /// `identity` (a grant on behalf of the caller, `Grant.caller`) at `tokenEndpoint`; nil for
    /// any other grant.
    ///
    /// RFC 8693 §2.1: `grant_type=urn:ietf:params:oauth:grant-type:token-exchange`, the caller's
    /// token as `subject_token` with its `subject_token_type`, the identity's actor token if it
    /// has one, and its `scope`, `audience` and `resource`s. Entra ID's on-behalf-of flow:
    /// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`, the caller's token as
    /// `assertion`, `requested_token_use=on_behalf_of` and the identity's `scope`. Either way with
    /// the identity's client authentication, `params` and headers, as its own grant would be sent.
    ///
    /// The caller's token is among the request's secrets: an IdP's error text that quotes it back
    /// shows it redacted. The form is the request's `builtForm`, so `rebuilt(for:)` keeps the
    /// caller's token when a credential file of the identity changes and takes the new client
    /// credentials.
    public static func exchange(for identity: Identity, callerToken: Secret, at tokenEndpoint: HTTPURL) -> TokenRequest? {
        guard case .caller(let grant) = identity.grant else { return nil }
        var form = TokenForm(grantType: grant.type.grantType)
        switch grant {
        case .tokenExchange(let subjectTokenType, let actor):
            form.add(ExtensionFields(subject: ExchangedToken(token: callerToken, type: subjectTokenType), actor: actor))
        case .onBehalfOf:
            form.add(ExtensionFields(assertion: callerToken))
            form.add("requested_token_use", "on_behalf_of")
        }
        form.addTarget(of: identity)
        return TokenRequest(purpose: .grant(grant.type), form: form, identity: identity, url: tokenEndpoint)
    }
}
