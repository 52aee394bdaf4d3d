import Endpoints
import SafeText

/// The question to an IdP's introspection endpoint about a caller's opaque token (RFC 7662 §2.1),
/// and the reading of its answer. The request is made like every other request to the IdP
/// (`TokenRequest.init`): the identity's client authentication (Basic or form secret, a client
/// assertion whose `aud` is the token endpoint or issuer, a client assertion file), its headers,
/// none of its `params`. The caller's token goes in as a `Secret`, so no error ever quotes it.
extension TokenRequest {
    /// `token` (the caller's access token) and `token_type_hint=access_token`, POSTed to
    /// `endpoint` as `identity`'s client. `tokenEndpoint` is what a client assertion's `aud`
    /// names (RFC 7523 §3 authenticates the client as at the token endpoint); nil names
    /// `endpoint` itself. Read the answer with `parseIntrospection(_:unixTime:)`.
    public static func introspection(for identity: Identity, token: Secret, at endpoint: HTTPURL,
                                     tokenEndpoint: HTTPURL?) -> TokenRequest {
        var form = TokenForm()
        form.add("token", token)
        form.add("token_type_hint", TokenTypeHint.accessToken.rawValue)
        return TokenRequest(purpose: .introspection, form: form, identity: identity, url: endpoint, tokenEndpoint: tokenEndpoint)
    }

    /// Reads the introspection endpoint's answer: an error as for any request to the IdP (an
    /// OAuth error such as `invalid_client`, a bare 401/403/5xx, a redirect), otherwise a 2xx
    /// whose body must be one JSON object of at most `IntrospectionResponse.maximumBodyBytes`
    /// bytes, read strictly (`IntrospectionResponse`).
    public func parseIntrospection(_ reply: TokenEndpointReply, unixTime: Double) throws(TokenEndpointError) -> IntrospectionResponse {
        _ = try EndpointAnswer.successMembers(of: reply, format: responseFormat, secrets: secrets, unixTime: unixTime)
        do throws(IntrospectionResponse.Invalid) {
            return try IntrospectionResponse(body: reply.body)
        } catch {
            throw .invalidTokenResponse(status: reply.status, contentType: reply.mediaType, reason: error.reason)
        }
    }
}
