/// Why an `auto` identity could not learn what it needs. Messages name the URL and the member,
/// quote at most 200 cleaned characters of what a server sent, and never a secret.
public indirect enum AutoSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The resource says nothing of its authorization: no metadata at the well-known URL and no
    /// `resource_metadata` in its 401 (or no 401 at all). `tried` says what each URL answered.
    /// Needs configuration: the route must name an identity.
    case noResourceMetadata(resource: String, tried: [String])
    /// RFC 9728 §3.3: the metadata's `resource` is not the upstream URL.
    case resourceMismatch(url: String, expected: String, found: String)
    /// A document that is not usable: a member missing, of the wrong type, a URL that is not https.
    case invalidDocument(url: String, reason: String)
    /// Plain http:// to a host that is not loopback (metadata, an issuer, a registration endpoint).
    case insecureURL(what: String, url: String)
    /// None of the resource's `authorization_servers` is allowed (`auto.allowedIssuers`; when it
    /// is empty, none is https on a public host, for a resource that is on one).
    case noAllowedIssuer(offered: [String], allowed: [String])
    /// The authorization server's discovery failed (an issuer mismatch among them).
    case discovery(DiscoveryError)
    /// The server offers no `registration_endpoint` and no client is configured: needs configuration.
    case registrationUnsupported(issuer: String)
    /// None of the server's `token_endpoint_auth_methods_supported` is one the relay can register with `auto.clientAuth`.
    case noUsableAuthMethod(issuer: String, supported: [String])
    /// The registration endpoint refused (`invalid_client_metadata`, `invalid_redirect_uri`,
    /// 401/403 without an initial access token, ...).
    case registrationRefused(url: String, status: Int, oauthError: String?, description: String?)
    /// A server could not be reached or was overloaded: tried again later with backoff.
    case unavailable(url: String, reason: String, retryAfter: Double?)
    /// The registration endpoint refused a registration sent without the configured initial
    /// access token, which goes only to an issuer `auto.allowedIssuers` lists: needs configuration.
    case initialAccessTokenWithheld(issuer: String, refusal: AutoSetupError)
    /// The token endpoint refused (`invalid_client`) the client the relay had just registered,
    /// before it got any token: registering again would loop. Needs configuration.
    case registeredClientRefused(issuer: String, reason: String)
    /// No registered client is kept, and this process does not register one (an offline
    /// `oauth-relay logout`): it would have registered at `endpoint`.
    case notRegistering(endpoint: String)

    /// True when trying again later may help without a config change.
    public var isTemporary: Bool {
        switch self {
        case .unavailable: return true
        case .discovery(let error): return error.isTemporary
        default: return false
        }
    }

    public var retryAfter: Double? {
        switch self {
        case .unavailable(_, _, let retryAfter): return retryAfter
        case .discovery(let error): return error.retryAfter
        default: return nil
        }
    }

    /// Only the configuration can help (the `needs-configuration` problem).
    public var needsConfiguration: Bool {
        switch self {
        case .noResourceMetadata, .registrationUnsupported, .noUsableAuthMethod, .noAllowedIssuer, .initialAccessTokenWithheld,
             .registeredClientRefused: return true
        default: return false
        }
    }

    /// A short code for logs, metrics and `/identities`.
    public var code: String {
        switch self {
        case .noResourceMetadata: "no_resource_metadata"
        case .resourceMismatch: "resource_mismatch"
        case .invalidDocument: "invalid_resource_metadata"
        case .insecureURL: "insecure_url"
        case .noAllowedIssuer: "issuer_not_allowed"
        case .discovery(let error): error.code
        case .registrationUnsupported: "registration_unsupported"
        case .noUsableAuthMethod: "no_usable_auth_method"
        case .registrationRefused: "registration_refused"
        case .unavailable: "unavailable"
        case .initialAccessTokenWithheld: "initial_access_token_withheld"
        case .registeredClientRefused: "registered_client_refused"
        case .notRegistering: "no_client_kept"
        }
    }

    public var description: String {
        switch self {
        case .noResourceMetadata(let resource, let tried):
            return "the resource server \(resource) published no protected resource metadata (RFC 9728), so the relay cannot "
                + "learn where to get a token for it: " + tried.joined(separator: "; ")
                + ". The relay asks again from time to time; if it never will publish it, give the route an identity of its own "
                + "(\"identity\": a name under \"identities\") instead of \"auto\""
        case .resourceMismatch(let url, let expected, let found):
            return "the protected resource metadata at \(url) is for the resource \"\(found)\", not the upstream \(expected) "
                + "(they must be the same, RFC 9728 §3.3)"
        case .invalidDocument(let url, let reason):
            return "the document at \(url) is not usable: \(reason)"
        case .insecureURL(let what, let url):
            return "\(what) is plain http:// to a host that is not loopback (\(url)); only https is used"
        case .noAllowedIssuer(let offered, let allowed):
            let offeredText = offered.isEmpty ? "the resource names no authorization server"
                : "the resource names the authorization servers " + offered.map { "\"\($0)\"" }.joined(separator: ", ")
            let allowedText = allowed.isEmpty
                ? (offered.isEmpty ? "" : ", none of them https on a host outside this machine and its local network (with "
                    + "auto.allowedIssuers unset, a resource elsewhere may not send the relay to an authorization server here)")
                : ", and auto.allowedIssuers allows only " + allowed.map { "\"\($0)\"" }.joined(separator: ", ")
            return offeredText + allowedText + ": no authorization server to use (list one in auto.allowedIssuers, "
                + "or give the route an identity of its own)"
        case .discovery(let error):
            return error.description
        case .registrationUnsupported(let issuer):
            return "the authorization server \"\(issuer)\" offers no registration_endpoint (RFC 7591), so the relay cannot "
                + "register itself: register a client there and give the route an identity of its own with its clientId"
        case .noUsableAuthMethod(let issuer, let supported):
            return "the authorization server \"\(issuer)\" supports the token_endpoint_auth_methods "
                + supported.map { "\"\($0)\"" }.joined(separator: ", ")
                + ", none of which auto.clientAuth allows (set auto.clientAuth to one of them)"
        case .registrationRefused(let url, let status, let oauthError, let description):
            let error = oauthError.map { " with error \($0)" } ?? ""
            let text = description.map { ": \"\($0)\"" } ?? ""
            return "the registration endpoint \(url) refused the registration (HTTP \(status))\(error)\(text)"
        case .unavailable(let url, let reason, let retryAfter):
            return "\(url) failed: \(reason)" + (retryAfter.map { ", Retry-After \(SecondsText.format($0)) s" } ?? "")
        case .initialAccessTokenWithheld(let issuer, let refusal):
            return refusal.description + "; the initial access token (auto.initialAccessToken) was withheld: the issuer \"\(issuer)\" "
                + "is not listed in auto.allowedIssuers (list it there to send the token to it)"
        case .registeredClientRefused(let issuer, let reason):
            return "the server refused the client it just registered: \"\(issuer)\" answered \(reason) to its first token request; "
                + "registering again would be refused the same way (check the server's client policy, or give the route an "
                + "identity of its own)"
        case .notRegistering(let endpoint):
            return "no registered client is kept, and this command registers none (it would register at \(endpoint))"
        }
    }
}
