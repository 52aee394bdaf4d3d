import Endpoints
import OAuth2
import SafeText
import XCTest

/// The `auto` chain step by step, each request answered by a script: resource metadata (RFC
/// 9728), the probe's challenge, discovery (RFC 8414), the stored client, registration (RFC 7591).
final class AutoResolutionTests: XCTestCase {
    private let wellKnown = HTTPURL(scheme: .https, host: "api.example.com", path: "/.well-known/oauth-protected-resource/mcp")
    private let resource = HTTPURL(scheme: .https, host: "api.example.com", path: "/mcp")
    private let issuer = "https://as.example.com"
    private let openID = HTTPURL(scheme: .https, host: "as.example.com", path: "/.well-known/openid-configuration")
    private let oauthServer = HTTPURL(scheme: .https, host: "as.example.com", path: "/.well-known/oauth-authorization-server")
    private let registration = HTTPURL(scheme: .https, host: "as.example.com", path: "/register")
    private let callback = "http://127.0.0.1:8180/.oauth-relay/callback"

    private func json(_ status: Int, _ body: String, headers: [(String, String)] = []) -> TokenEndpointReply {
        TokenEndpointReply(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    private func metadata(resource: String = "https://api.example.com/mcp", servers: String = #"["https://as.example.com"]"#,
                          scopes: String = #"["mcp:read", "mcp:write"]"#) -> TokenEndpointReply {
        json(200, #"{"resource": "\#(resource)", "authorization_servers": \#(servers), "scopes_supported": \#(scopes)}"#)
    }

    private func server(issuer: String = "https://as.example.com", registration: String? = "https://as.example.com/register",
                        methods: String = #"["client_secret_basic"]"#) -> TokenEndpointReply {
        let registrationMember = registration.map { #", "registration_endpoint": "\#($0)""# } ?? ""
        return json(200, #"{"issuer": "\#(issuer)", "token_endpoint": "https://as.example.com/token", "#
                    + #""authorization_endpoint": "https://as.example.com/authorize", "revocation_endpoint": "https://as.example.com/revoke", "#
                    + #""token_endpoint_auth_methods_supported": \#(methods)\#(registrationMember)}"#)
    }

    private var key: RegistrationKey {
        RegistrationKey(identity: "auto-api.example.com-mcp", issuer: issuer, redirectUri: callback, clientAuth: .automatic)
    }

    /// Runs the chain to its `loadClient` step through the well-known metadata.
    private func toLoadClient(_ resolution: inout AutoResolution, server reply: TokenEndpointReply? = nil) {
        XCTAssertEqual(resolution.firstStep, .fetch(wellKnown, toResource: true))
        XCTAssertEqual(resolution.received(metadata(), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(reply ?? server(), unixTime: 0), .loadClient(key))
    }

    private func resolved(_ step: AutoResolution.Step, file: StaticString = #filePath, line: UInt = #line) throws -> AutoResolved {
        guard case .resolved(let resolved) = step else {
            XCTFail("not resolved: \(step)", file: file, line: line)
            throw XCTSkip()
        }
        return resolved
    }

    func testHappyPathThroughTheWellKnownMetadataAndA201Registration() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution)
        let step = resolution.loaded(nil, unixTime: 100)
        let expected = ClientRegistrationRequest(endpoint: registration, clientName: "oauth-relay", redirectURIs: [callback],
                                                 grantTypes: ["authorization_code", "refresh_token"], responseTypes: ["code"],
                                                 tokenEndpointAuthMethod: "client_secret_basic", scope: "mcp:read mcp:write")
        XCTAssertEqual(step, .register(expected))
        let done = try resolved(resolution.received(json(201, #"{"client_id": "c-1", "client_secret": "s-1"}"#), unixTime: 100))

        var identity = autoIdentity()
        identity.issuer = issuer
        identity.clientAuth = .basic(id: "c-1", secret: Secret("s-1"))
        identity.scope = "mcp:read mcp:write"
        identity.resource = ["https://api.example.com/mcp"]
        XCTAssertEqual(done.identity, identity)
        var endpoints = IdentityEndpoints(token: HTTPURL(scheme: .https, host: "as.example.com", path: "/token"),
                                          authorization: HTTPURL(scheme: .https, host: "as.example.com", path: "/authorize"),
                                          revocation: HTTPURL(scheme: .https, host: "as.example.com", path: "/revoke"))
        endpoints.idTokenAlgorithms = []
        XCTAssertEqual(done.endpoints, endpoints)
        XCTAssertEqual(done.key, key)
        XCTAssertTrue(done.newlyRegistered)
        XCTAssertEqual(done.client.clientId, "c-1")
        XCTAssertEqual(done.facts, AutoFacts(resource: "https://api.example.com/mcp", resourceMetadataURL: wellKnown.description,
                                             resourceMetadataSource: .wellKnown, authorizationServer: issuer,
                                             authorizationServerSource: .resourceMetadata, clientId: "c-1", clientSource: .registration,
                                             tokenEndpointAuthMethod: "client_secret_basic", scope: "mcp:read mcp:write",
                                             scopeSource: .resourceMetadata, registeredAt: 100))
    }

    func testProbeChallengeRFC8414DocumentAndA200PublicClientRegistration() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404, headers: [("Content-Type", "text/html")], body: "<h1>no</h1>"),
                                           unixTime: 0), .probe(resource))
        let challenge = TokenEndpointReply(status: 401, headers: [
            ("WWW-Authenticate", #"Basic realm="x""#),
            ("www-authenticate", #"Bearer resource_metadata="https://meta.example.com/mcp", scope="mcp:read""#),
        ], body: "")
        let meta = HTTPURL(scheme: .https, host: "meta.example.com", path: "/mcp")
        XCTAssertEqual(resolution.received(challenge, unixTime: 0), .fetch(meta, toResource: true))
        XCTAssertEqual(resolution.received(metadata(), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .fetch(oauthServer, toResource: false))
        XCTAssertEqual(resolution.received(server(methods: #"["none", "client_secret_basic"]"#), unixTime: 0), .loadClient(key))
        guard case .register(let request) = resolution.loaded(nil, unixTime: 5) else { return XCTFail("no registration") }
        XCTAssertEqual(request.tokenEndpointAuthMethod, "none")
        XCTAssertEqual(request.scope, "mcp:read", "the challenge's scope")
        let done = try resolved(resolution.received(json(200, #"{"client_id": "pub-7", "token_endpoint_auth_method": "none"}"#), unixTime: 5))
        XCTAssertEqual(done.identity.clientAuth, .publicClient(id: "pub-7"))
        XCTAssertEqual(done.facts.resourceMetadataURL, "https://meta.example.com/mcp")
        XCTAssertEqual(done.facts.resourceMetadataSource, .challenge)
        XCTAssertEqual(done.facts.scopeSource, .challenge)
        XCTAssertEqual(done.facts.tokenEndpointAuthMethod, "none")
    }

    func testAStoredClientIsReusedWithoutRegistering() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution)
        let stored = RegisteredClient(issuer: issuer, clientId: "kept", clientSecret: Secret("kept-secret"), tokenEndpointAuthMethod: "client_secret_basic",
                                      redirectUri: callback, registeredAt: 42)
        let done = try resolved(resolution.loaded(stored, unixTime: 1000))
        XCTAssertFalse(done.newlyRegistered)
        XCTAssertEqual(done.client, stored)
        XCTAssertEqual(done.identity.clientAuth, .basic(id: "kept", secret: Secret("kept-secret")))
        XCTAssertEqual(done.facts.clientSource, .store)
        XCTAssertEqual(done.facts.registeredAt, 42)
    }

    func testAStoredClientForAnotherCallbackIsReplaced() {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution)
        let stale = RegisteredClient(issuer: issuer, clientId: "old", clientSecret: Secret("s"), tokenEndpointAuthMethod: "client_secret_basic",
                                     redirectUri: "http://127.0.0.1:1/cb", registeredAt: 1)
        guard case .register = resolution.loaded(stale, unixTime: 1000) else { return XCTFail("the stale client was reused") }
    }

    func testConfiguredScopeAndPreferredIssuer() throws {
        let identity = autoIdentity {
            $0.scope = "custom"
            $0.allowedIssuers = ["https://as.example.com", "https://first.example.com"]
        }
        var resolution = AutoResolution(identity: identity)
        XCTAssertEqual(resolution.received(metadata(servers: #"["https://first.example.com", "https://as.example.com"]"#), unixTime: 0),
                       .fetch(openID, toResource: false), "allowedIssuers' order wins over the resource's")
        XCTAssertEqual(resolution.received(server(), unixTime: 0), .loadClient(key))
        guard case .register(let request) = resolution.loaded(nil, unixTime: 0) else { return XCTFail("no registration") }
        XCTAssertEqual(request.scope, "custom")
        let done = try resolved(resolution.received(json(201, #"{"client_id": "c", "client_secret": "s"}"#), unixTime: 0))
        XCTAssertEqual(done.facts.scopeSource, .configuration)
        XCTAssertEqual(done.facts.authorizationServerSource, .configuration)
    }

    func testAChallengesResourceMetadataIsFetchedFirst() {
        let challenge = BearerChallenge(resourceMetadata: "https://api.example.com/meta")
        let resolution = AutoResolution(identity: autoIdentity(), challenge: challenge)
        XCTAssertEqual(resolution.firstStep, .fetch(HTTPURL(scheme: .https, host: "api.example.com", path: "/meta"), toResource: true))
        let insecure = AutoResolution(identity: autoIdentity(), challenge: BearerChallenge(resourceMetadata: "http://evil.example.com/m"))
        XCTAssertEqual(insecure.firstStep, .failed(.insecureURL(what: "the resource_metadata of the resource's 401 challenge",
                                                                url: "http://evil.example.com/m")))
        let loopback = AutoResolution(identity: autoIdentity { $0.resource = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/mcp") },
                                      challenge: BearerChallenge(resourceMetadata: "http://127.0.0.1:9/m"))
        XCTAssertEqual(loopback.firstStep, .fetch(HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/m"), toResource: true))
    }

    func testPlainHTTPToLoopbackIsForALoopbackResourceOnly() {
        let remote = AutoResolution(identity: autoIdentity(), challenge: BearerChallenge(resourceMetadata: "http://127.0.0.1:9/m"))
        XCTAssertEqual(remote.firstStep, .failed(.insecureURL(what: "the resource_metadata of the resource's 401 challenge",
                                                              url: "http://127.0.0.1:9/m")), "a remote resource names no local http URL")
    }

    func testPlainHTTPRegistrationEndpointToLoopbackIsForALoopbackIssuerOnly() {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution, server: server(registration: "http://127.0.0.1:9/register"))
        XCTAssertEqual(resolution.loaded(nil, unixTime: 0),
                       .failed(.insecureURL(what: "the registration_endpoint of \"https://as.example.com\"", url: "http://127.0.0.1:9/register")))
    }

    // MARK: The issue's negative list

    func testResourceMismatch() {
        var resolution = AutoResolution(identity: autoIdentity())
        let step = resolution.received(metadata(resource: "https://api.example.com/other"), unixTime: 0)
        XCTAssertEqual(step, .failed(.resourceMismatch(url: wellKnown.description, expected: "https://api.example.com/mcp",
                                                       found: "https://api.example.com/other")))
    }

    func testAuthorizationServerIssuerMismatch() {
        var resolution = AutoResolution(identity: autoIdentity())
        _ = resolution.received(metadata(), unixTime: 0)
        XCTAssertEqual(resolution.received(server(issuer: "https://evil.example.com"), unixTime: 0),
                       .failed(.discovery(.issuerMismatch(url: openID.description, expected: issuer, found: "https://evil.example.com"))))
    }

    func testRegistrationRefused() {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution)
        _ = resolution.loaded(nil, unixTime: 0)
        let step = resolution.received(json(400, #"{"error": "invalid_client_metadata", "error_description": "scope not allowed"}"#), unixTime: 0)
        XCTAssertEqual(step, .failed(.registrationRefused(url: registration.description, status: 400, oauthError: "invalid_client_metadata",
                                                          description: "scope not allowed")))
    }

    func testPlainHTTPRegistrationEndpoint() {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution, server: server(registration: "http://as.example.com/register"))
        XCTAssertEqual(resolution.loaded(nil, unixTime: 0),
                       .failed(.insecureURL(what: "the registration_endpoint of \"https://as.example.com\"", url: "http://as.example.com/register")))
    }

    func testNoMetadataAnywhereNeedsConfiguration() {
        let answers: [(TokenEndpointReply, String)] = [
            (TokenEndpointReply(status: 401, headers: [("WWW-Authenticate", #"Basic realm="x""#)], body: ""),
             "without a token, https://api.example.com/mcp answered HTTP 401 without a Bearer challenge"),
            (TokenEndpointReply(status: 401, headers: [("WWW-Authenticate", #"Bearer realm="x""#)], body: ""),
             "without a token, https://api.example.com/mcp answered HTTP 401 with a Bearer challenge that has no resource_metadata"),
            (TokenEndpointReply(status: 200), "without a token, https://api.example.com/mcp answered HTTP 200, not 401"),
        ]
        for (probeAnswer, what) in answers {
            var resolution = AutoResolution(identity: autoIdentity())
            XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
            let step = resolution.received(probeAnswer, unixTime: 0)
            let tried = "\(wellKnown) answered HTTP 404 (no content type, 0 bytes)"
            XCTAssertEqual(step, .failed(.noResourceMetadata(resource: "https://api.example.com/mcp", tried: [tried, what])))
            guard case .failed(let error) = step else { continue }
            XCTAssertTrue(error.needsConfiguration)
            XCTAssertTrue(error.description.contains("give the route an identity of its own"), error.description)
        }
    }

    func testNoRegistrationEndpointNeedsConfiguration() {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution, server: server(registration: nil))
        XCTAssertEqual(resolution.loaded(nil, unixTime: 0), .failed(.registrationUnsupported(issuer: issuer)))
    }

    func testNoAllowedIssuer() {
        var resolution = AutoResolution(identity: autoIdentity { $0.allowedIssuers = ["https://trusted.example.com"] })
        XCTAssertEqual(resolution.received(metadata(), unixTime: 0),
                       .failed(.noAllowedIssuer(offered: ["https://as.example.com"], allowed: ["https://trusted.example.com"])))
        var empty = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(empty.received(metadata(servers: "[]"), unixTime: 0), .failed(.noAllowedIssuer(offered: [], allowed: [])))
    }

    func testUnreachableAndOverloadedServersAreTemporary() {
        var down = AutoResolution(identity: autoIdentity())
        let failed = down.failed(.unreachable(reason: "connection refused"))
        XCTAssertEqual(failed, .failed(.unavailable(url: wellKnown.description, reason: "unreachable: connection refused", retryAfter: nil)))
        var busy = AutoResolution(identity: autoIdentity())
        let step = busy.received(TokenEndpointReply(status: 503, headers: [("Retry-After", "20")], body: ""), unixTime: 0)
        XCTAssertEqual(step, .failed(.unavailable(url: wellKnown.description, reason: "it answered HTTP 503", retryAfter: 20)))
        var discovery = AutoResolution(identity: autoIdentity())
        _ = discovery.received(metadata(), unixTime: 0)
        guard case .failed(let error) = discovery.failed(.timedOut(seconds: 10)) else { return XCTFail("went on") }
        XCTAssertTrue(error.isTemporary)
        XCTAssertFalse(error.needsConfiguration)
    }
}
