import Endpoints

/// The URL the browser is sent to at the authorization endpoint (RFC 6749 §4.1.1 with PKCE,
/// RFC 7636 §4.3, and OpenID Connect Core §3.1.2.1's `nonce`), built from a started login.
///
/// It carries `response_type=code`, `client_id`, `redirect_uri`, `scope`, `state`, `nonce`
/// (when the login has one), `code_challenge` and `code_challenge_method=S256`, and the
/// identity's `audience` and `resource`s (RFC 8707 §2 sends resources here too, so the code is
/// bound to them), then the identity's `authorizationParams` by name (Google's
/// `access_type=offline`, Slack's `user_scope`). The identity's `params` are not sent: they are
/// fields of token requests, and an IdP may reject unknown parameters at the authorization
/// endpoint or show them to the person.
///
/// A login for a step-up (`LoginStart.stepUp`) asks for the identity's scope joined with the
/// step-up's, and adds its `acr_values` and `max_age` (RFC 9470 §4): those replace any of the
/// same name in `authorizationParams`, since they are what the upstream asked for.
///
/// An endpoint that already has a query keeps it (RFC 6749 §3.1), minus any parameter named
/// like one of these, which would otherwise be sent twice, and minus a request object
/// (`requestObjectParameters`).
public struct AuthorizationRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The parameters every authorization request carries, set from the login or from their own
    /// keys (`scope`, `clientId`, `redirectUri`): `authorizationParams` may not name them. It may
    /// name `audience` and `resource` when the identity's own keys do not set them.
    public static let relayParameters = ["response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
                                         "code_challenge", "code_challenge_method"]

    /// Parameters that would replace the request's own (RFC 9101: a request object, by value or by
    /// reference, whose parameters the IdP reads instead of the query's, state and PKCE challenge
    /// included): never sent, from `authorizationParams` (which the config refuses them in) or
    /// the endpoint's query.
    public static let requestObjectParameters = ["request", "request_uri"]

    /// The full URL, with its query: the `Location` of the redirect. (Holds `state`, `nonce`
    /// and the challenge: never log it; `description` hides the query.)
    public let url: HTTPURL

    /// The request for `login` of `identity` at `endpoint` (the configured or discovered
    /// authorization endpoint).
    public init(endpoint: HTTPURL, identity: Identity, login: LoginStart) {
        var parameters: [(name: String, value: String)] = [
            ("response_type", "code"),
            ("client_id", identity.clientAuth.clientId ?? ""),
            ("redirect_uri", login.redirectUri),
        ]
        if let scope = login.stepUp.map({ $0.widening(identity.scope) }) ?? identity.scope { parameters.append(("scope", scope)) }
        parameters.append(("state", login.state.value))
        if let nonce = login.nonce { parameters.append(("nonce", nonce.value)) }
        parameters += [("code_challenge", login.pkce.challenge), ("code_challenge_method", PKCE.method)]
        if let audience = identity.audience { parameters.append(("audience", audience)) }
        parameters += identity.resource.map { ("resource", $0) }
        let stepUpParameters = login.stepUp?.authenticationParameters ?? []
        parameters += stepUpParameters
        let setHere = Set(Self.relayParameters + Self.requestObjectParameters + stepUpParameters.map(\.name))
        parameters += identity.authorizationParams
            .filter { !setHere.contains($0.key) }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }

        let ours = Set(parameters.map(\.name) + Self.requestObjectParameters)
        let kept = endpoint.query.map { query in
            query.split(separator: "&", omittingEmptySubsequences: true).filter { pair in
                let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
                return !ours.contains(FormURLEncoding.decode(String(name)).first?.name ?? String(name))
            }
        } ?? []
        var url = endpoint
        url.query = (kept.map(String.init) + [FormURLEncoding.encode(parameters)]).joined(separator: "&")
        self.url = url
    }

    /// The value of the `Location` header.
    public var location: String { url.description }

    public var description: String { "GET \(redactedURL(url)) (authorization request)" }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["request": description], displayStyle: .struct)
    }
}
