import Crypto
import Endpoints
import SafeText

/// How an `auto` identity learns what it needs, as steps the token thread drives (no I/O here):
///
/// 1. The resource's metadata (RFC 9728): from the well-known URL (§3.1); when that serves
///    none, the resource itself is asked without a token (`probe`) and the `resource_metadata`
///    of its 401's challenges is followed. The metadata's `resource` must be the upstream URL.
/// 2. The authorization server: the first of `authorization_servers` that `allowedIssuers`
///    admits (when it is empty, any https one not on this machine or its local network, unless
///    the resource is there too); then its metadata (`ProviderDiscovery`, whose issuer check is
///    never skipped).
/// 3. The client: the registration kept in the store for `RegistrationKey` (`loadClient`), else
///    a new one (RFC 7591) at the server's `registration_endpoint`, with an auth method chosen
///    from `token_endpoint_auth_methods_supported`; a 200 is accepted as well as a 201. A kept
///    registration's `learntScope` (a step-up login's) joins the scope.
/// 4. Resolved: the identity completed (issuer, client, scope, RFC 8707 `resource` = the
///    metadata's `resource` as written, which matched the upstream) with its endpoints, and
///    what came from where (`AutoFacts`).
///
///     var resolution = AutoResolution(identity: identity)
///     var step = resolution.firstStep
///     loop { switch step { case .fetch(let url, _): step = resolution.received(try await get(url), unixTime: now) ... } }
public struct AutoResolution: Sendable {
    public enum Step: Sendable, Equatable {
        /// GET this JSON document (`Accept: application/json`, no redirects followed):
        /// `toResource` (a URL of the resource's own scheme, host and port) with the resource's
        /// TLS settings (`AutoSettings.resourceTLS`), else the identity's (`Identity.tls`; an
        /// `auto` identity has none of its own: default verification). Report with `received`
        /// or `failed`.
        case fetch(HTTPURL, toResource: Bool)
        /// GET the resource itself without a token, for its 401's `WWW-Authenticate`, with the
        /// resource's TLS settings. Report with `received` or `failed`.
        case probe(HTTPURL)
        /// Read the registration kept for this key; report with `loaded` (nil: none).
        case loadClient(RegistrationKey)
        /// Send this registration; report with `received` or `failed`.
        case register(ClientRegistrationRequest)
        /// Done. When `resolved.newlyRegistered`, keep `resolved.client` for the key first.
        case resolved(AutoResolved)
        case failed(AutoSetupError)
    }

    /// The identity as configured (its `auto` settings, name, grant, callback, TLS).
    private let identity: Identity
    private let settings: AutoSettings
    /// The `scope` of the probe's 401 challenge that named the metadata.
    private var challengeScope: [String] = []
    public let firstStep: Step
    private var phase: Phase

    /// Where the chain is: what the last step asked for, and what it has learnt so far.
    private enum Phase {
        /// The resource's metadata document was asked for at `url`.
        case resourceMetadata(url: HTTPURL, source: AutoFacts.Source)
        /// The well-known URL served none (`tried` says what it answered); the resource was probed.
        case probe(tried: [String])
        /// The authorization server's metadata is being discovered.
        case discovery(ProviderDiscovery, Learnt)
        /// The registration kept for `key` was asked for.
        case loadingClient(Learnt, ProviderMetadata, RegistrationKey)
        /// A registration was sent.
        case registering(Learnt, ProviderMetadata, RegistrationKey, ClientRegistrationRequest, privateKeyPEM: Secret?)
        /// A `resolved` or `failed` step was answered.
        case ended
    }

    /// What the chain has learnt before its client.
    private struct Learnt {
        var metadataURL: HTTPURL
        var metadataSource: AutoFacts.Source
        var issuer: String
        var issuerSource: AutoFacts.Source
        var scope: String?
        var scopeSource: AutoFacts.Source?
        /// The metadata's `scopes_supported` (empty: none listed).
        var scopesSupported: [String]
        /// The identity completed but for its client: issuer, scope, resource.
        var identity: Identity
        var endpoints: IdentityEndpoints?
    }

    public init(identity: Identity) {
        guard let settings = identity.auto else { preconditionFailure("AutoResolution is for an identity with auto settings") }
        self.identity = identity
        self.settings = settings
        let url = ResourceMetadata.wellKnownURL(for: settings.resource)
        if url.scheme == .https || HostSyntax.isLoopback(url.host) {
            phase = .resourceMetadata(url: url, source: .wellKnown)
            firstStep = .fetch(url, toResource: true)
        } else {
            phase = .ended
            firstStep = .failed(.insecureURL(what: "the resource's metadata URL", url: redactedURL(url)))
        }
    }

    /// The answer to the request of the last `fetch`, `probe` or `register` step.
    public mutating func received(_ reply: TokenEndpointReply, unixTime: Double) -> Step {
        switch phase {
        case .resourceMetadata(let url, let source):
            return metadataReceived(reply, from: url, source: source, unixTime: unixTime)
        case .probe(let tried):
            return probeAnswered(reply, tried: tried, unixTime: unixTime)
        case .discovery(var discovery, let learnt):
            switch discovery.received(reply, unixTime: unixTime) {
            case .fetch(let url):
                phase = .discovery(discovery, learnt)
                return .fetch(url, toResource: false)
            case .found(let metadata):
                return discovered(metadata, at: discovery.currentURL, learnt: learnt)
            case .failed(let error):
                return end(.failed(.discovery(error)))
            }
        case .registering(let learnt, let metadata, let key, let request, let privateKeyPEM):
            do throws(AutoSetupError) {
                let client = try RegisteredClient.parse(reply, to: request, issuer: learnt.issuer, privateKeyPEM: privateKeyPEM,
                                                        unixTime: unixTime)
                return resolved(learnt, metadata: metadata, client: client, key: key, newlyRegistered: true)
            } catch {
                return end(.failed(error))
            }
        case .loadingClient, .ended:
            preconditionFailure("AutoResolution.received with no request under way")
        }
    }

    /// The request of the last step got no answer (the HTTP client's `unreachable`/`timedOut`).
    public mutating func failed(_ error: TokenEndpointError) -> Step {
        let reason = switch error {
        case .unreachable(let reason): "unreachable: \(reason)"
        case .timedOut(let seconds): "no answer within \(SecondsText.format(seconds)) s"
        default: error.code
        }
        switch phase {
        case .resourceMetadata(let url, _):
            return end(.failed(.unavailable(url: redactedURL(url), reason: reason, retryAfter: error.retryAfter)))
        case .probe:
            return end(.failed(.unavailable(url: redactedURL(settings.resource), reason: reason, retryAfter: error.retryAfter)))
        case .discovery(var discovery, _):
            guard case .failed(let failure) = discovery.failed(error) else { preconditionFailure("discovery goes on after a failure") }
            return end(.failed(.discovery(failure)))
        case .registering(_, _, _, let request, _):
            return end(.failed(.unavailable(url: redactedURL(request.endpoint), reason: reason, retryAfter: error.retryAfter)))
        case .loadingClient, .ended:
            preconditionFailure("AutoResolution.failed with no request under way")
        }
    }

    /// The registration kept for the `loadClient` step's key (nil: none, or unreadable).
    public mutating func loaded(_ client: RegisteredClient?, unixTime: Double) -> Step {
        guard case .loadingClient(let learnt, let metadata, let key) = phase else {
            preconditionFailure("AutoResolution.loaded with no loadClient step under way")
        }
        if let client, client.isUsable(for: key, at: unixTime) {
            return resolved(learnt, metadata: metadata, client: client, key: key, newlyRegistered: false)
        }
        guard let endpoint = metadata.registrationEndpoint else { return end(.failed(.registrationUnsupported(issuer: learnt.issuer))) }
        guard LoopbackHTTP.allows(endpoint, namedBy: learnt.issuer) else {
            return end(.failed(.insecureURL(what: "the registration_endpoint of \"\(learnt.issuer)\"", url: redactedURL(endpoint))))
        }
        do throws(AutoSetupError) {
            let method = try settings.clientAuth.registeredMethod(supported: metadata.tokenEndpointAuthMethodsSupported,
                                                                  issuer: learnt.issuer)
            var generated: GeneratedClientKey?
            if method == "private_key_jwt" {
                do throws(CryptoError) {
                    generated = try GeneratedClientKey.make()
                } catch {
                    throw .unavailable(url: redactedURL(endpoint), reason: "the private_key_jwt key could not be generated: \(error)",
                                       retryAfter: nil)
                }
            }
            let request = ClientRegistrationRequest(identity: identity, settings: settings, issuer: learnt.issuer, endpoint: endpoint,
                                                    method: method,
                                                    scope: ClientRegistrationRequest.registeredScope(
                                                        learnt: learnt.scope, configured: settings.scope,
                                                        supported: learnt.scopesSupported),
                                                    jwks: generated?.jwks)
            phase = .registering(learnt, metadata, key, request, privateKeyPEM: generated?.pem)
            return .register(request)
        } catch {
            return end(.failed(error))
        }
    }

    // MARK: - The chain's steps

    private mutating func end(_ step: Step) -> Step {
        phase = .ended
        return step
    }

    /// `text` as the URL of a metadata document: absolute, and https (http only to loopback, for
    /// a `resource` on loopback).
    private static func metadataURL(_ text: String, what: String, resource: HTTPURL) -> Result<HTTPURL, AutoSetupError> {
        let url: HTTPURL
        do throws(HTTPURLSyntaxError) {
            url = try HTTPURL(absolute: text)
        } catch {
            return .failure(.invalidDocument(url: ErrorText.clean(text, removing: []),
                                             reason: "\(what) is not an absolute http(s) URL: \(ErrorText.clean(error.message, removing: []))"))
        }
        guard LoopbackHTTP.allows(url, namedBy: resource) else {
            return .failure(.insecureURL(what: what, url: redactedURL(url)))
        }
        return .success(url)
    }

    /// The fetch of the resource's metadata at `url`: with the resource's TLS settings only on
    /// the resource's own scheme, host and port. A `resource_metadata` URL may name any host, and
    /// the route's `tls` (its CA, its client certificate, `insecureSkipVerify`) is for the
    /// upstream alone.
    private static func fetchMetadata(_ url: HTTPURL, of settings: AutoSettings) -> Step {
        let resource = settings.resource
        return .fetch(url, toResource: url.hasSameOrigin(as: resource))
    }

    private mutating func metadataReceived(_ reply: TokenEndpointReply, from url: HTTPURL, source: AutoFacts.Source,
                                           unixTime: Double) -> Step {
        switch DocumentAnswer(reply, from: url, unixTime: unixTime) {
        case .document(let members):
            do throws(AutoSetupError) {
                let metadata = try ResourceMetadata(members: members, from: redactedURL(url), expectedResource: settings.resource)
                return chooseServer(metadata, metadataURL: url, source: source)
            } catch {
                return end(.failed(error))
            }
        case .notHere(let answer):
            guard source == .wellKnown else {
                return end(.failed(.noResourceMetadata(resource: settings.resource.description, tried: [answer])))
            }
            phase = .probe(tried: [answer])
            return .probe(settings.resource)
        case .failed(let error):
            return end(.failed(Self.unavailable(error, url: url)))
        }
    }

    /// The resource's answer without a token: a 401 whose challenge names its metadata.
    private mutating func probeAnswered(_ reply: TokenEndpointReply, tried: [String], unixTime: Double) -> Step {
        let resource = settings.resource
        let status = reply.status
        if status >= 500 || status == 429 || status == 408 {
            let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.seconds($0, unixTime: unixTime) }
            return end(.failed(.unavailable(url: redactedURL(resource), reason: "it answered HTTP \(status)", retryAfter: retryAfter)))
        }
        let values = reply.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
        // RFC 9728 §5.1: the metadata's URL may be on any of the challenges (a DPoP one, or a
        // Bearer one after another scheme's).
        let challenge = status == 401 ? BearerChallenge.resourceMetadataChallenge(in: values) : nil
        guard let challenge, let link = challenge.resourceMetadata else {
            let what = status != 401 ? "without a token, \(redactedURL(resource)) answered HTTP \(status), not 401"
                : BearerChallenge.parse(values) == nil ? "without a token, \(redactedURL(resource)) answered HTTP 401 without a Bearer challenge"
                : "without a token, \(redactedURL(resource)) answered HTTP 401 with a Bearer challenge that has no resource_metadata"
            return end(.failed(.noResourceMetadata(resource: resource.description, tried: tried + [what])))
        }
        challengeScope = challenge.scope
        switch Self.metadataURL(link, what: "the resource_metadata of the resource's 401 challenge", resource: resource) {
        case .success(let url):
            phase = .resourceMetadata(url: url, source: .challenge)
            return Self.fetchMetadata(url, of: settings)
        case .failure(let error):
            return end(.failed(error))
        }
    }

    /// The authorization server: the first of the resource's that `allowedIssuers` admits, in
    /// the order `allowedIssuers` prefers; when it is empty, the resource's first that
    /// `admitsUnlisted`. Then its discovery.
    private mutating func chooseServer(_ metadata: ResourceMetadata, metadataURL: HTTPURL, source: AutoFacts.Source) -> Step {
        let allowed = settings.allowedIssuers
        let chosen = allowed.isEmpty ? metadata.authorizationServers.first(where: admitsUnlisted)
            : allowed.first(where: metadata.authorizationServers.contains)
        guard let issuer = chosen else {
            return end(.failed(.noAllowedIssuer(offered: metadata.authorizationServers.map { ErrorText.clean($0, removing: []) },
                                                allowed: allowed)))
        }
        let (scope, scopeSource): (String?, AutoFacts.Source?) =
            if let scope = settings.scope { (scope, .configuration) }
            else if !challengeScope.isEmpty { (challengeScope.joined(separator: " "), .challenge) }
            else if !metadata.scopesSupported.isEmpty { (metadata.scopesSupported.joined(separator: " "), .resourceMetadata) }
            else { (nil, nil) }
        var learnt = identity
        learnt.issuer = issuer
        learnt.scope = scope
        // RFC 8707: the resource as the resource server names it (it matched the upstream URL).
        learnt.resource = [metadata.resource]
        let known = Learnt(metadataURL: metadataURL, metadataSource: source, issuer: issuer,
                           issuerSource: allowed.isEmpty ? .resourceMetadata : .configuration, scope: scope, scopeSource: scopeSource,
                           scopesSupported: metadata.scopesSupported, identity: learnt)
        do throws(DiscoveryError) {
            let discovery = try ProviderDiscovery(issuer: issuer)
            phase = .discovery(discovery, known)
            return .fetch(discovery.firstURL, toResource: false)
        } catch {
            return end(.failed(.discovery(error)))
        }
    }

    /// With `allowedIssuers` empty, an issuer the resource names is used when it is https on a
    /// host of the internet: a resource elsewhere must not send the relay (and the person's login)
    /// to an authorization server on this machine or its local network (`LocalNetworkHost`), such
    /// as a developer's own IdP. A resource on such a host may name one there.
    private func admitsUnlisted(_ issuer: String) -> Bool {
        if LocalNetworkHost.contains(settings.resource.host) { return true }
        guard let url = try? HTTPURL(absolute: issuer, allowsQuery: false) else { return false }
        return url.scheme == .https && !LocalNetworkHost.contains(url.host)
    }

    /// The server's metadata: the identity's endpoints, then its client (`loadClient`).
    private mutating func discovered(_ metadata: ProviderMetadata, at url: HTTPURL, learnt: Learnt) -> Step {
        var learnt = learnt
        do throws(DiscoveryError) {
            learnt.endpoints = try IdentityEndpoints(identity: learnt.identity, metadata: metadata, documentURL: url.description)
        } catch {
            return end(.failed(.discovery(error)))
        }
        let key = RegistrationKey(identity: identity.name, issuer: learnt.issuer,
                                  redirectUri: identity.grant.type == .authorizationCode ? identity.redirectUri?.description : nil,
                                  clientAuth: settings.clientAuth)
        phase = .loadingClient(learnt, metadata, key)
        return .loadClient(key)
    }

    private mutating func resolved(_ learnt: Learnt, metadata: ProviderMetadata, client: RegisteredClient, key: RegistrationKey,
                                   newlyRegistered: Bool) -> Step {
        guard let clientAuth = client.clientAuth, let endpoints = learnt.endpoints else {
            return end(.failed(.invalidDocument(url: redactedURL(metadata.registrationEndpoint ?? metadata.tokenEndpoint),
                                                reason: "the client registered cannot authenticate with \(client.tokenEndpointAuthMethod)")))
        }
        var learnt = learnt
        if let kept = client.learntScope {
            // A step-up login widened the scope of this registration's identity: asked for again
            // (joined after the chain's own, as the step-up joined it), so the login kept for it is found.
            let own = learnt.scope.map { $0.split(separator: " ").map(String.init) } ?? []
            let joined = StepUp.union(own, kept.split(separator: " ").map(String.init))
            if joined != own, !joined.isEmpty {
                learnt.scope = joined.joined(separator: " ")
                learnt.scopeSource = .store
                learnt.identity.scope = learnt.scope
            }
        }
        var identity = learnt.identity
        identity.clientAuth = clientAuth
        let facts = AutoFacts(resource: learnt.identity.resource.first ?? settings.resource.description, resourceMetadataURL: redactedURL(learnt.metadataURL),
                              resourceMetadataSource: learnt.metadataSource, authorizationServer: learnt.issuer,
                              authorizationServerSource: learnt.issuerSource, clientId: client.clientId,
                              clientSource: newlyRegistered ? .registration : .store,
                              tokenEndpointAuthMethod: client.tokenEndpointAuthMethod, scope: learnt.scope,
                              scopeSource: learnt.scopeSource, registeredAt: client.registeredAt,
                              scopesSupported: learnt.scopesSupported)
        return end(.resolved(AutoResolved(identity: identity, endpoints: endpoints, client: client, key: key,
                                          newlyRegistered: newlyRegistered, facts: facts)))
    }

    private static func unavailable(_ error: DiscoveryError, url: HTTPURL) -> AutoSetupError {
        if case .unavailable(_, let reason, let retryAfter) = error {
            return .unavailable(url: redactedURL(url), reason: reason, retryAfter: retryAfter)
        }
        return .discovery(error)
    }
}

/// What an `auto` identity learnt.
public struct AutoResolved: Sendable, Equatable {
    /// The identity completed: `issuer`, `clientAuth`, `scope`, `resource` (the upstream); `auto` kept.
    public var identity: Identity
    public var endpoints: IdentityEndpoints
    public var client: RegisteredClient
    public var key: RegistrationKey
    /// Registered just now: the token thread keeps it in the store before using it. The
    /// lifecycle turns it false once the client got a token (an `invalid_client` before that is
    /// a refusal of the new client, not a server that forgot it).
    public var newlyRegistered: Bool
    public var facts: AutoFacts

    public init(identity: Identity, endpoints: IdentityEndpoints, client: RegisteredClient, key: RegistrationKey,
                newlyRegistered: Bool, facts: AutoFacts) {
        self.identity = identity
        self.endpoints = endpoints
        self.client = client
        self.key = key
        self.newlyRegistered = newlyRegistered
        self.facts = facts
    }
}

/// What an `auto` identity learnt and where each value came from, for `/identities` and
/// `oauth-relay check --resolve`. Never a secret.
public struct AutoFacts: Sendable, Equatable {
    public enum Source: String, Sendable, Equatable {
        /// RFC 9728 §3.1's well-known URL of the resource.
        case wellKnown = "well-known"
        /// The `resource_metadata` (or `scope`) of the resource's 401 challenge.
        case challenge
        /// The configuration (`auto.allowedIssuers`, `auto.scope`).
        case configuration
        /// The resource's metadata (`authorization_servers`, `scopes_supported`).
        case resourceMetadata = "resource-metadata"
        /// A registration made now (RFC 7591).
        case registration
        /// A registration kept in the token store (for `scope`: the scope a step-up login learnt, kept with it).
        case store
    }

    public var resource: String
    public var resourceMetadataURL: String
    public var resourceMetadataSource: Source
    public var authorizationServer: String
    public var authorizationServerSource: Source
    public var clientId: String
    public var clientSource: Source
    public var tokenEndpointAuthMethod: String
    public var scope: String?
    public var scopeSource: Source?
    /// Unix time the client was registered.
    public var registeredAt: Double
    /// The resource metadata's `scopes_supported` (empty: none listed), whatever the scope's
    /// source: what bounds the scopes a step-up may add when `auto.scope` is not set.
    public var scopesSupported: [String]

    public init(resource: String, resourceMetadataURL: String, resourceMetadataSource: Source, authorizationServer: String,
                authorizationServerSource: Source, clientId: String, clientSource: Source, tokenEndpointAuthMethod: String,
                scope: String?, scopeSource: Source?, registeredAt: Double, scopesSupported: [String] = []) {
        self.resource = resource
        self.resourceMetadataURL = resourceMetadataURL
        self.resourceMetadataSource = resourceMetadataSource
        self.authorizationServer = authorizationServer
        self.authorizationServerSource = authorizationServerSource
        self.clientId = clientId
        self.clientSource = clientSource
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.scope = scope
        self.scopeSource = scopeSource
        self.registeredAt = registeredAt
        self.scopesSupported = scopesSupported
    }
}
