import Endpoints
import SafeText

/// The requests of the interactive grants, and of the IdP's endpoints beside the token
/// endpoint, each with the identity's client authentication (id, secret, Basic or a client
/// assertion whose `aud` is the token endpoint or issuer, as for token requests) and headers.
/// Every code, verifier, device code and token goes in as a `Secret`, so no error quotes it.
extension TokenRequest {
    /// Which token a revocation names (RFC 7009 §2.1 `token_type_hint`).
    public enum TokenTypeHint: String, Sendable, Equatable {
        case refreshToken = "refresh_token"
        case accessToken = "access_token"
    }

    /// The code exchange of a login (RFC 6749 §4.1.3, RFC 7636 §4.5): the code from the
    /// callback, the login's PKCE verifier and the very `redirect_uri` of its authorization
    /// request.
    public static func authorizationCode(for identity: Identity, code: Secret, verifier: Secret, redirectUri: String,
                                         at tokenEndpoint: HTTPURL) -> TokenRequest {
        var form = TokenForm(grantType: GrantType.authorizationCode.grantType)
        form.add("code", code)
        form.add("redirect_uri", redirectUri)
        form.add("code_verifier", verifier)
        form.addLearntResources(of: identity)
        return TokenRequest(purpose: .grant(.authorizationCode), form: form, identity: identity, url: tokenEndpoint)
    }

    /// One poll of a device login (RFC 8628 §3.4).
    public static func deviceCodePoll(for identity: Identity, deviceCode: Secret, at tokenEndpoint: HTTPURL) -> TokenRequest {
        var form = TokenForm(grantType: GrantType.deviceCode.grantType)
        form.add("device_code", deviceCode)
        form.addLearntResources(of: identity)
        return TokenRequest(purpose: .grant(.deviceCode), form: form, identity: identity, url: tokenEndpoint)
    }

    /// The start of a device login at the device authorization endpoint (RFC 8628 §3.1): the
    /// identity's `scope`, `audience` and `resource`s (the token then carries what they asked
    /// for; the polls ask for nothing more). `tokenEndpoint` is what a client assertion names.
    /// A login for a step-up (`stepUp`) asks for its scope too, and its `acr_values`/`max_age`.
    /// Read the answer with `parseDeviceAuthorization(_:unixTime:)`.
    public static func deviceAuthorization(for identity: Identity, at endpoint: HTTPURL, tokenEndpoint: HTTPURL,
                                           stepUp: StepUp? = nil) -> TokenRequest {
        var form = TokenForm()
        form.add("scope", stepUp.map { $0.widening(identity.scope) } ?? identity.scope)
        form.add("audience", identity.audience)
        for resource in identity.resource {
            form.add("resource", resource)
        }
        for parameter in stepUp?.authenticationParameters ?? [] {
            form.add(parameter.name, parameter.value)
        }
        return TokenRequest(purpose: .deviceAuthorization, form: form, identity: identity, url: endpoint, tokenEndpoint: tokenEndpoint)
    }

    /// A revocation at logout (RFC 7009 §2.1), of the refresh token by default: revoking it
    /// ends the grant, and most IdPs revoke its access tokens with it. Read the answer with
    /// `parseRevocation(_:unixTime:)`.
    public static func revocation(for identity: Identity, token: Secret, hint: TokenTypeHint? = .refreshToken,
                                  at endpoint: HTTPURL, tokenEndpoint: HTTPURL) -> TokenRequest {
        var form = TokenForm()
        form.add("token", token)
        form.add("token_type_hint", hint?.rawValue)
        return TokenRequest(purpose: .revocation, form: form, identity: identity, url: endpoint, tokenEndpoint: tokenEndpoint)
    }

    /// Reads the device authorization endpoint's answer: the codes to show, or the error it is.
    public func parseDeviceAuthorization(_ reply: TokenEndpointReply, unixTime: Double) throws(TokenEndpointError) -> DeviceAuthorization {
        let members = try EndpointAnswer.successMembers(of: reply, format: responseFormat, secrets: secrets, unixTime: unixTime)
        guard let members else {
            throw .invalidTokenResponse(status: reply.status, contentType: reply.mediaType,
                                        reason: reply.body.isEmpty ? "the body is empty" : "the body is not a JSON object")
        }
        do throws(DeviceAuthorization.Invalid) {
            return try DeviceAuthorization(members: members)
        } catch {
            throw .invalidTokenResponse(status: reply.status, contentType: reply.mediaType, reason: error.reason)
        }
    }

    /// Reads the revocation endpoint's answer: any 2xx is success (RFC 7009 §2.2 answers 200
    /// even for a token it does not know, so a second logout succeeds too); otherwise the
    /// error it is (`unsupported_token_type`, a 503 with `Retry-After`, ...).
    public func parseRevocation(_ reply: TokenEndpointReply, unixTime: Double) throws(TokenEndpointError) {
        _ = try EndpointAnswer.successMembers(of: reply, format: responseFormat, secrets: secrets, unixTime: unixTime)
    }

    /// `error` described with the endpoint this request went to.
    public func describe(_ error: TokenEndpointError) -> String {
        error.description(endpoint: purpose.endpointName)
    }
}

extension TokenForm {
    /// An `auto` identity names its upstream (RFC 8707 §2.2) in the code exchange and the device
    /// polls as well as in the authorization request: the token is asked for that resource
    /// alone. (Configured identities keep sending their `resource`s where they always did.)
    mutating func addLearntResources(of identity: Identity) {
        guard identity.auto != nil else { return }
        for resource in identity.resource { add("resource", resource) }
    }
}
