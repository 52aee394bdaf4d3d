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
                                             scopeSource: .resourceMetadata, registeredAt: 100, scopesSupported: ["mcp:read", "mcp:write"]))
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
        XCTAssertEqual(resolution.received(challenge, unixTime: 0), .fetch(meta, toResource: false))
        XCTAssertEqual(resolution.received(metadata(), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .fetch(oauthServer, toResource: false))
        XCTAssertEqual(resolution.received(server(methods: #"["none", "client_secret_basic"]"#), unixTime: 0), .loadClient(key))
        guard case .register(let request) = resolution.loaded(nil, unixTime: 5) else { return XCTFail("no registration") }
        XCTAssertEqual(request.tokenEndpointAuthMethod, "none")
        XCTAssertEqual(request.scope, "mcp:read mcp:write", "the challenge's scope, and every one the resource supports")
        let done = try resolved(resolution.received(json(200, #"{"client_id": "pub-7", "token_endpoint_auth_method": "none"}"#), unixTime: 5))
        XCTAssertEqual(done.identity.scope, "mcp:read", "the login asks for the challenge's scope")
        XCTAssertEqual(done.identity.clientAuth, .publicClient(id: "pub-7"))
        XCTAssertEqual(done.facts.resourceMetadataURL, "https://meta.example.com/mcp")
        XCTAssertEqual(done.facts.resourceMetadataSource, .challenge)
        XCTAssertEqual(done.facts.scopeSource, .challenge)
        XCTAssertEqual(done.facts.scopesSupported, ["mcp:read", "mcp:write"], "whatever the scope's source")
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

    func testAStoredClientsLearntScopeJoinsTheScopeAfterTheChainsOwn() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        toLoadClient(&resolution)
        let stored = RegisteredClient(issuer: issuer, clientId: "kept", clientSecret: Secret("kept-secret"), tokenEndpointAuthMethod: "client_secret_basic",
                                      redirectUri: callback, registeredAt: 42, learntScope: "mcp:read mcp:write mcp:admin")
        let done = try resolved(resolution.loaded(stored, unixTime: 1000))
        XCTAssertEqual(done.identity.scope, "mcp:read mcp:write mcp:admin")
        XCTAssertEqual(done.facts.scope, "mcp:read mcp:write mcp:admin")
        XCTAssertEqual(done.facts.scopeSource, .store)

        // A learnt scope the chain's own already holds changes nothing.
        var again = AutoResolution(identity: autoIdentity())
        toLoadClient(&again)
        var narrow = stored
        narrow.learntScope = "mcp:write"
        let same = try resolved(again.loaded(narrow, unixTime: 1000))
        XCTAssertEqual(same.identity.scope, "mcp:read mcp:write")
        XCTAssertEqual(same.facts.scopeSource, .resourceMetadata)
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
        XCTAssertEqual(request.scope, "custom mcp:read mcp:write")
        let done = try resolved(resolution.received(json(201, #"{"client_id": "c", "client_secret": "s"}"#), unixTime: 0))
        XCTAssertEqual(done.facts.scopeSource, .configuration)
        XCTAssertEqual(done.facts.authorizationServerSource, .configuration)
    }

    func testAChallengesResourceMetadataMustBeAnHTTPSURL() {
        let answers: [(String, AutoResolution.Step)] = [
            ("http://evil.example.com/m", .failed(.insecureURL(what: "the resource_metadata of the resource's 401 challenge",
                                                               url: "http://evil.example.com/m"))),
            ("http://127.0.0.1:9/m", .failed(.insecureURL(what: "the resource_metadata of the resource's 401 challenge",
                                                          url: "http://127.0.0.1:9/m"))),
            ("/relative", .failed(.invalidDocument(url: "/relative", reason: "the resource_metadata of the resource's 401 challenge is not "
                                                   + #"an absolute http(s) URL: "/relative" is not an absolute URL (expected http://… or https://…)"#))),
        ]
        for (link, step) in answers {
            var resolution = AutoResolution(identity: autoIdentity())
            XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
            let challenge = TokenEndpointReply(status: 401, headers: [("WWW-Authenticate", #"Bearer resource_metadata="\#(link)""#)], body: "")
            XCTAssertEqual(resolution.received(challenge, unixTime: 0), step, link)
        }
    }

    func testTheResourcesTLSSettingsAreUsedOnlyOnItsOwnSchemeHostAndPort() {
        let answers: [(String, Bool)] = [
            ("https://api.example.com/meta", true), ("https://API.example.com:443/meta", true),
            ("https://api.example.com:8443/meta", false), ("https://meta.example.com/mcp", false),
        ]
        for (link, toResource) in answers {
            var resolution = AutoResolution(identity: autoIdentity())
            XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
            let challenge = TokenEndpointReply(status: 401, headers: [("WWW-Authenticate", #"Bearer resource_metadata="\#(link)""#)], body: "")
            guard case .fetch(_, let asked) = resolution.received(challenge, unixTime: 0) else { XCTFail(link); continue }
            XCTAssertEqual(asked, toResource, link)
        }
    }

    func testTheProbeFindsTheResourceMetadataOnAnyChallenge() throws {
        let headers: [[(String, String)]] = [
            [("WWW-Authenticate", #"DPoP algs="ES256", Bearer resource_metadata="https://api.example.com/meta", scope="mcp:read""#)],
            [("WWW-Authenticate", #"DPoP algs="ES256""#), ("WWW-Authenticate", #"Bearer resource_metadata="https://api.example.com/meta", scope="mcp:read""#)],
            [("WWW-Authenticate", #"Bearer realm="x", DPoP resource_metadata="https://api.example.com/meta", scope="mcp:read""#)],
            [("WWW-Authenticate", #"Bearer realm, Bearer resource_metadata="https://api.example.com/meta", scope="mcp:read""#)],
        ]
        for fields in headers {
            var resolution = AutoResolution(identity: autoIdentity())
            XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
            let step = resolution.received(TokenEndpointReply(status: 401, headers: fields, body: ""), unixTime: 0)
            guard step == .fetch(HTTPURL(scheme: .https, host: "api.example.com", path: "/meta"), toResource: true) else {
                XCTFail("\(fields): \(step)")
                continue
            }
            XCTAssertEqual(resolution.received(metadata(), unixTime: 0), .fetch(openID, toResource: false))
            XCTAssertEqual(resolution.received(server(), unixTime: 0), .loadClient(key))
            guard case .register = resolution.loaded(nil, unixTime: 0) else { XCTFail("no registration"); continue }
            let done = try resolved(resolution.received(json(201, #"{"client_id": "c", "client_secret": "s"}"#), unixTime: 0))
            XCTAssertEqual(done.identity.scope, "mcp:read", "the scope of the challenge that named the metadata: \(fields)")
        }
        XCTAssertEqual(BearerChallenge.resourceMetadataURL(in: [#"DPoP algs="ES256", Bearer resource_metadata="https://m.example/x""#]),
                       "https://m.example/x")
        XCTAssertNil(BearerChallenge.resourceMetadataURL(in: [#"Bearer realm="x", DPoP algs="ES256""#]))
    }

    func testAProbeChallengesScopeOutsideRFC6749ScopeTokensIsNotUsed() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(resolution.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
        let challenge = TokenEndpointReply(status: 401, headers: [
            ("WWW-Authenticate", #"Bearer resource_metadata="https://api.example.com/meta", scope="mcp:read caf\#u{e9}""#),
        ], body: "")
        XCTAssertEqual(resolution.received(challenge, unixTime: 0),
                       .fetch(HTTPURL(scheme: .https, host: "api.example.com", path: "/meta"), toResource: true))
        XCTAssertEqual(resolution.received(metadata(), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(server(), unixTime: 0), .loadClient(key))
        guard case .register = resolution.loaded(nil, unixTime: 0) else { return XCTFail("no registration") }
        let done = try resolved(resolution.received(json(201, #"{"client_id": "c", "client_secret": "s"}"#), unixTime: 0))
        XCTAssertEqual(done.identity.scope, "mcp:read mcp:write", "the resource's scopes_supported, not the challenge's")
        XCTAssertEqual(done.facts.scopeSource, .resourceMetadata)
    }

    func testTheMetadatasResourceAsWrittenIsTheRFC8707Resource() throws {
        var resolution = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(resolution.received(metadata(resource: "https://API.example.com/mcp/"), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(server(), unixTime: 0), .loadClient(key))
        _ = resolution.loaded(nil, unixTime: 0)
        let done = try resolved(resolution.received(json(201, #"{"client_id": "c", "client_secret": "s"}"#), unixTime: 0))
        XCTAssertEqual(done.identity.resource, ["https://API.example.com/mcp/"])
        XCTAssertEqual(done.facts.resource, "https://API.example.com/mcp/")
    }

    func testTheRegistrationAsksForEveryScopeTheResourceSupports() {
        let identity = autoIdentity { $0.scope = "profile mcp:read" }
        var resolution = AutoResolution(identity: identity)
        XCTAssertEqual(resolution.received(metadata(scopes: #"["mcp:read", "mcp:admin"]"#), unixTime: 0), .fetch(openID, toResource: false))
        XCTAssertEqual(resolution.received(server(), unixTime: 0), .loadClient(key))
        guard case .register(let request) = resolution.loaded(nil, unixTime: 0) else { return XCTFail("no registration") }
        XCTAssertEqual(request.scope, "profile mcp:read mcp:admin")
        var none = AutoResolution(identity: autoIdentity())
        _ = none.received(metadata(scopes: "[]"), unixTime: 0)
        _ = none.received(server(), unixTime: 0)
        guard case .register(let bare) = none.loaded(nil, unixTime: 0) else { return XCTFail("no registration") }
        XCTAssertNil(bare.scope)
        XCTAssertEqual(ClientRegistrationRequest.registeredScope(learnt: "a b", configured: "b c", supported: ["c", "d"]), "a b c d")
    }

    func testPlainHTTPToLoopbackIsForALoopbackResourceOnly() {
        var remote = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(remote.received(TokenEndpointReply(status: 404), unixTime: 0), .probe(resource))
        let challenge = TokenEndpointReply(status: 401, headers: [("WWW-Authenticate", #"Bearer resource_metadata="http://127.0.0.1:9/m""#)], body: "")
        XCTAssertEqual(remote.received(challenge, unixTime: 0), .failed(.insecureURL(what: "the resource_metadata of the resource's 401 challenge",
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
            XCTAssertTrue(error.description.hasPrefix("the resource server https://api.example.com/mcp published no protected resource metadata (RFC 9728)"), error.description)
            XCTAssertTrue(error.description.contains("if it never will publish it, give the route an identity of its own"), error.description)
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

    func testAResourceElsewhereCannotSendTheRelayToAnIssuerOnThisMachineOrItsNetwork() {
        for local in ["http://localhost:8080/realms/dev", "https://localhost/realms/dev", "https://127.0.0.1:8443", "https://[::1]",
                      "https://10.1.2.3", "https://172.20.0.1", "https://192.168.1.1", "https://169.254.169.254",
                      "https://[fd00::1]", "https://[fe80::1]", "https://[::ffff:10.0.0.1]", "https://0.0.0.0"] {
            var resolution = AutoResolution(identity: autoIdentity())
            XCTAssertEqual(resolution.received(metadata(servers: #"["\#(local)"]"#), unixTime: 0),
                           .failed(.noAllowedIssuer(offered: [local], allowed: [])), local)
        }
        var skipping = AutoResolution(identity: autoIdentity())
        XCTAssertEqual(skipping.received(metadata(servers: #"["https://192.168.0.9", "https://as.example.com"]"#), unixTime: 0),
                       .fetch(openID, toResource: false), "the first issuer on a public host")
        let step = AutoResolution.Step.failed(.noAllowedIssuer(offered: ["https://10.1.2.3"], allowed: []))
        guard case .failed(let error) = step else { return }
        XCTAssertTrue(error.description.contains("none of them https on a host outside this machine"), error.description)
    }

    func testAnIssuerOnThisMachineIsUsedWhenListedOrForAResourceThere() {
        let devIssuer = "http://localhost:8080/realms/dev"
        let devDiscovery = HTTPURL(scheme: .http, host: "localhost", port: 8080, path: "/realms/dev/.well-known/openid-configuration")
        var listed = AutoResolution(identity: autoIdentity { $0.allowedIssuers = [devIssuer] })
        XCTAssertEqual(listed.received(metadata(servers: #"["\#(devIssuer)"]"#), unixTime: 0), .fetch(devDiscovery, toResource: false))
        let localResource = autoIdentity { $0.resource = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9000, path: "/mcp") }
        var local = AutoResolution(identity: localResource)
        XCTAssertEqual(local.received(metadata(resource: "http://127.0.0.1:9000/mcp", servers: #"["\#(devIssuer)"]"#), unixTime: 0),
                       .fetch(devDiscovery, toResource: false))
        let privateResource = autoIdentity { $0.resource = HTTPURL(scheme: .https, host: "10.0.0.5", path: "/mcp") }
        var lan = AutoResolution(identity: privateResource)
        XCTAssertEqual(lan.received(metadata(resource: "https://10.0.0.5/mcp", servers: #"["https://10.0.0.6"]"#), unixTime: 0),
                       .fetch(HTTPURL(scheme: .https, host: "10.0.0.6", path: "/.well-known/openid-configuration"), toResource: false))
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
