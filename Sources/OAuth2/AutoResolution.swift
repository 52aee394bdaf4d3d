import Endpoints

/// How an `auto` identity learns what it needs, as steps the token thread drives (no I/O here):
///
/// 1. The resource's metadata (RFC 9728): from the `resource_metadata` URL of a challenge when
///    one is given, else the well-known URL (§3.1); when that serves none, the resource itself
///    is asked without a token (`probe`) and its 401's `resource_metadata` is followed. The
///    metadata's `resource` must be the upstream URL.
/// 2. The authorization server: the first of `authorization_servers` that `allowedIssuers`
///    admits (any https one when it is empty); then its metadata (`ProviderDiscovery`, whose
///    issuer check is never skipped).
/// 3. The client: the registration kept in the store for `RegistrationKey` (`loadClient`), else
///    a new one (RFC 7591) at the server's `registration_endpoint`, with an auth method chosen
///    from `token_endpoint_auth_methods_supported`; a 200 is accepted as well as a 201.
/// 4. Resolved: the identity completed (issuer, client, scope, RFC 8707 `resource` = upstream)
///    with its endpoints, and what came from where (`AutoFacts`).
///
///     var resolution = AutoResolution(identity: identity)
///     var step = resolution.firstStep
///     loop { switch step { case .fetch(let url, _): step = resolution.received(try await get(url), unixTime: now) ... } }
public struct AutoResolution: Sendable {
    public enum Step: Sendable, Equatable {
        /// GET this JSON document (`Accept: application/json`, no redirects followed):
        /// `toResource` with the resource's TLS settings (`AutoSettings.resourceTLS`), else the
        /// identity's (`Identity.tls`). Report with `received` or `failed`.
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

    /// `challenge`: the upstream's 401 that started this, when one did.
    public init(identity: Identity, challenge: BearerChallenge? = nil) {
        fatalError("contract: built by the OAuth2 helper")
    }

    public var firstStep: Step {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The answer to the request of the last `fetch`, `probe` or `register` step.
    public mutating func received(_ reply: TokenEndpointReply, unixTime: Double) -> Step {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The request of the last step got no answer (the HTTP client's `unreachable`/`timedOut`).
    public mutating func failed(_ error: TokenEndpointError) -> Step {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// The registration kept for the `loadClient` step's key (nil: none, or unreadable).
    public mutating func loaded(_ client: RegisteredClient?, unixTime: Double) -> Step {
        fatalError("contract: built by the OAuth2 helper")
    }
}

/// What an `auto` identity learnt.
public struct AutoResolved: Sendable, Equatable {
    /// The identity completed: `issuer`, `clientAuth`, `scope`, `resource` (the upstream); `auto` kept.
    public var identity: Identity
    public var endpoints: IdentityEndpoints
    public var client: RegisteredClient
    public var key: RegistrationKey
    /// Registered just now: the token thread keeps it in the store before using it.
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
        /// A registration kept in the token store.
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

    public init(resource: String, resourceMetadataURL: String, resourceMetadataSource: Source, authorizationServer: String,
                authorizationServerSource: Source, clientId: String, clientSource: Source, tokenEndpointAuthMethod: String,
                scope: String?, scopeSource: Source?, registeredAt: Double) {
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
    }
}
