/// How the client authenticates to the token endpoint, with the credentials that takes.
///
/// A new method is a new case with its payload, sent by `TokenRequest`. The JWT methods send a
/// fresh client assertion (RFC 7523 §2.2) with every request, signed on the token thread just
/// before sending (`TokenRequest.withClientAssertion`); `client_assertion_file` sends the one
/// its file holds, read again when the file changes.

import SafeText

public enum ClientAuth: Sendable, Equatable {
    /// client_secret_basic: HTTP Basic with client id and secret.
    case basic(id: String, secret: Secret)
    /// client_secret_post: `client_id` and `client_secret` in the form.
    case post(id: String, secret: Secret)
    /// `none`, a public client: `client_id` in the form, no secret. (Not named `none`, which
    /// reads like `Optional.none` where a `ClientAuth?` is expected.)
    case publicClient(id: String)
    /// No client identification at all: an extension grant without `clientId` or secret, whose
    /// assertion or token identifies the client (RFC 7523 §3.1).
    case unidentified
    /// private_key_jwt (RFC 7523, OpenID Connect Core §9): an assertion signed with the client's
    /// private key.
    case privateKeyJWT(id: String, key: ClientAssertionKey)
    /// client_secret_jwt: an HS256 assertion keyed with the client secret, which never goes on
    /// the wire itself.
    case clientSecretJWT(id: String, secret: Secret)
    /// `client_assertion_file`: a client assertion made elsewhere — a JWT the platform writes to
    /// a file (a Kubernetes projected service-account token, a SPIFFE JWT-SVID, a CI system's
    /// OIDC token) — sent as it is, with `client_id` when the identity has one (and does not
    /// leave it out: `sendClientIdWithAssertion`). Workload
    /// identity federation (Entra, Google, Okta, Keycloak) authenticates clients this way.
    case clientAssertion(id: String?, assertion: Secret)

    /// The client id, when one is sent. An extension grant may set a secret without a
    /// `clientId`; its id is then empty, and `post` sends no `client_id` field.
    public var clientId: String? {
        switch self {
        case .basic(let id, _), .post(let id, _), .publicClient(let id), .privateKeyJWT(let id, _), .clientSecretJWT(let id, _): id
        case .clientAssertion(let id, _): id
        case .unidentified: nil
        }
    }

    /// Whether the method authenticates with a client assertion (RFC 7521 §4.2) in the form,
    /// which `client_id` goes beside unless the identity says not
    /// (`TokenRequest.clientIdBesideAssertion(of:)`).
    public var sendsClientAssertion: Bool {
        switch self {
        case .privateKeyJWT, .clientSecretJWT, .clientAssertion: true
        case .basic, .post, .publicClient, .unidentified: false
        }
    }

    /// The method's name in the config (`clientAuth`).
    public var name: String {
        switch self {
        case .basic: "basic"
        case .post: "post"
        case .publicClient, .unidentified: "none"
        case .privateKeyJWT: "private_key_jwt"
        case .clientSecretJWT: "client_secret_jwt"
        case .clientAssertion: "client_assertion_file"
        }
    }
}
