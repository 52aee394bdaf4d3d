import Endpoints

extension TokenRequest {
    /// A Google service account's request (`ServiceAccountGrant`): `grant_type`
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer` and, once signed just before it is sent
    /// (`withGrantAssertion`), `assertion`: a JWT whose `scope`, `sub` and `aud` (the token URL the
    /// request goes to) carry what other grants send as form fields. No `scope`, `audience` or
    /// `resource` field and no client authentication: the assertion is both grant and client.
    ///
    /// A self-signed account's request stands for its fetch in the lifecycle only and is never
    /// sent (the token thread makes the token instead: `ServiceAccountGrant.selfSignedToken`), so
    /// it carries no assertion to make.
    static func serviceAccount(_ account: ServiceAccountGrant, for identity: Identity, at tokenEndpoint: HTTPURL) -> TokenRequest {
        var assertion: PendingGrantAssertion?
        if case .tokenEndpoint(let scope, let subject) = account.token {
            assertion = PendingGrantAssertion(key: account.key, scope: scope, subject: subject, audience: tokenEndpoint.description)
        }
        return TokenRequest(purpose: .grant(.jwtBearer), form: TokenForm(grantType: GrantType.jwtBearer.grantType),
                            identity: identity, url: tokenEndpoint, grantAssertion: assertion)
    }
}
