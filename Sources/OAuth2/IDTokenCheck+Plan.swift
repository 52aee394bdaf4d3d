import Endpoints
import SafeText

extension IDTokenCheck {
    /// What a login's code exchange does with the ID token of its token response.
    public enum Plan: Sendable, Equatable {
        /// Check `idToken` with the keys at `jwks`; the login's tokens are taken only if it passes.
        case check(IDTokenCheck, idToken: Secret, jwks: HTTPURL)
        /// There is none, and the identity asked for none (no `openid` in its scope): the
        /// tokens are taken without saying who logged in.
        case noneAskedFor
        /// There is one the identity did not ask for and has no issuer or JWKS to check: it is
        /// never read (no name shown from it); the access and refresh tokens are taken.
        case leaveUnread
        /// The login is refused: an ID token was asked for and is missing, or cannot be checked.
        case refuse(reason: String)
    }

    /// The plan for a token response's `idToken` (nil: it has none), for
    /// `identity` with its `endpoints` and the login's `nonce`. An ID token is never taken
    /// unchecked: an identity that asks for one (`openid`) and has no issuer, client id or JWKS
    /// to check it with refuses the login (discovery refuses such metadata first; this holds
    /// even if that changes).
    public static func plan(for identity: Identity, endpoints: IdentityEndpoints?, nonce: Secret?, idToken: Secret?) -> Plan {
        guard let idToken else {
            return identity.requestsIDToken ? .refuse(reason: "the token response has no id_token although the scope asks for openid")
                : .noneAskedFor
        }
        let issuer = identity.issuer, jwks = endpoints?.jwks, clientId = identity.clientAuth.clientId
        if let issuer, let jwks, let clientId {
            return .check(IDTokenCheck(issuer: issuer, clientId: clientId, nonce: nonce,
                                       publishedAlgorithms: endpoints?.idTokenAlgorithms ?? []), idToken: idToken, jwks: jwks)
        }
        guard identity.requestsIDToken else { return .leaveUnread }
        var lacking: [String] = []
        if issuer == nil { lacking.append("no issuer to check its iss against") }
        if jwks == nil { lacking.append("no JWKS (jwks_uri or jwksUrl) to check its signature with") }
        if clientId == nil { lacking.append("no client id to check its aud against") }
        return .refuse(reason: "the ID token cannot be checked: the identity has " + lacking.joined(separator: ", "))
    }
}
