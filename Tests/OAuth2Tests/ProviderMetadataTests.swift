import Endpoints
import OAuth2
import XCTest

/// Discovery: which documents are asked for, and what of an answer is trusted.
final class ProviderMetadataTests: XCTestCase {
    private let issuer = "https://idp.example.com/realms/acme"
    private lazy var openIDURL = HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/.well-known/openid-configuration")

    private func document(_ changes: [String: String] = [:], removing removed: Set<String> = []) -> String {
        var members: [String: String] = [
            "issuer": #""https://idp.example.com/realms/acme""#,
            "token_endpoint": #""https://idp.example.com/realms/acme/token""#,
            "authorization_endpoint": #""https://idp.example.com/realms/acme/auth?prompt=login""#,
            "device_authorization_endpoint": #""https://idp.example.com/realms/acme/device""#,
            "jwks_uri": #""https://keys.example.com/acme/jwks""#,
            "revocation_endpoint": #""https://idp.example.com/realms/acme/revoke""#,
            "code_challenge_methods_supported": #"["plain", "S256"]"#,
            "id_token_signing_alg_values_supported": #"["RS256", "ES256"]"#,
            "authorization_response_iss_parameter_supported": "true",
            "response_types_supported": #"["code"]"#,
        ]
        for (name, value) in changes { members[name] = value }
        for name in removed { members[name] = nil }
        return "{" + members.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
    }

    private func parse(_ body: String, status: Int = 200, contentType: String? = "application/json",
                       allowInsecureHTTP: Bool = false) throws -> ProviderMetadata {
        try ProviderMetadata.parse(reply(status, body, contentType: contentType), from: openIDURL, issuer: issuer,
                                   allowInsecureHTTP: allowInsecureHTTP, unixTime: 0)
    }

    private func error(_ body: String, status: Int = 200, contentType: String? = "application/json",
                       file: StaticString = #filePath, line: UInt = #line) -> DiscoveryError? {
        do {
            let metadata = try parse(body, status: status, contentType: contentType)
            XCTFail("expected an error, got \(metadata)", file: file, line: line)
            return nil
        } catch {
            return error as? DiscoveryError
        }
    }

    func testDocumentURLsOpenIDFirstThenRFC8414() throws {
        XCTAssertEqual(try ProviderMetadata.documentURLs(issuer: issuer).map(\.description), [
            "https://idp.example.com/realms/acme/.well-known/openid-configuration",
            "https://idp.example.com/.well-known/oauth-authorization-server/realms/acme",
        ])
        XCTAssertEqual(try ProviderMetadata.documentURLs(issuer: "https://idp.example.com").map(\.description), [
            "https://idp.example.com/.well-known/openid-configuration",
            "https://idp.example.com/.well-known/oauth-authorization-server",
        ])
        XCTAssertEqual(try ProviderMetadata.documentURLs(issuer: "http://127.0.0.1:9000/o/").map(\.description), [
            "http://127.0.0.1:9000/o/.well-known/openid-configuration",
            "http://127.0.0.1:9000/.well-known/oauth-authorization-server/o",
        ])
    }

    func testRegistrationMembers() throws {
        let metadata = try parse(document([
            "registration_endpoint": #""https://idp.example.com/realms/acme/register""#,
            "token_endpoint_auth_methods_supported": #"["none", "private_key_jwt"]"#,
            "scopes_supported": #"["openid", "mcp"]"#, "grant_types_supported": #"["authorization_code"]"#,
        ]))
        XCTAssertEqual(metadata.registrationEndpoint, HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/register"))
        XCTAssertEqual(metadata.tokenEndpointAuthMethodsSupported, ["none", "private_key_jwt"])
        XCTAssertEqual(metadata.scopesSupported, ["openid", "mcp"])
        XCTAssertEqual(metadata.grantTypesSupported, ["authorization_code"])
        let bare = try parse(document())
        XCTAssertNil(bare.registrationEndpoint)
        XCTAssertEqual(bare.tokenEndpointAuthMethodsSupported, [])
        // A plain http registration endpoint does not fail discovery for identities that never
        // register; AutoResolution refuses it (AutoResolutionTests).
        XCTAssertEqual(try parse(document(["registration_endpoint": #""http://idp.example.com/register""#])).registrationEndpoint?.scheme, .http)
        for (member, value, reason) in [
            ("registration_endpoint", #""/register""#, #"registration_endpoint is not an absolute http(s) URL: "/register" is not an absolute URL (expected http://… or https://…)"#),
            ("token_endpoint_auth_methods_supported", #""none""#, "token_endpoint_auth_methods_supported is not an array of strings"),
            ("scopes_supported", "[1]", "scopes_supported is not an array of strings"),
            ("grant_types_supported", "{}", "grant_types_supported is not an array of strings"),
        ] {
            XCTAssertEqual(error(document([member: value])), .invalidDocument(url: openIDURL.description, reason: reason), member)
        }
    }

    func testIssuerMustBeAnHTTPSURLWithoutQuery() {
        for bad in ["idp.example.com", "https://idp.example.com/?tenant=a", "https://idp.example.com/#x", "http://idp.example.com"] {
            XCTAssertThrowsError(try ProviderMetadata.documentURLs(issuer: bad), bad) {
                guard case .invalidIssuer? = $0 as? DiscoveryError else { return XCTFail("\($0)") }
            }
        }
        XCTAssertNoThrow(try ProviderMetadata.documentURLs(issuer: "http://idp.example.com", allowInsecureHTTP: true))
        XCTAssertNoThrow(try ProviderMetadata.documentURLs(issuer: "http://localhost:8000"))
    }

    func testFullDocument() throws {
        let metadata = try parse(document())
        XCTAssertEqual(metadata, ProviderMetadata(
            issuer: issuer,
            tokenEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/token"),
            authorizationEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/auth", query: "prompt=login"),
            deviceAuthorizationEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/device"),
            jwksUri: HTTPURL(scheme: .https, host: "keys.example.com", path: "/acme/jwks"),
            revocationEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/realms/acme/revoke"),
            codeChallengeMethodsSupported: ["plain", "S256"], idTokenSigningAlgValuesSupported: ["RS256", "ES256"],
            dpopSigningAlgValuesSupported: nil, authorizationResponseIssParameterSupported: true))
    }

    func testMinimalDocument() throws {
        let metadata = try parse(#"{"issuer": "https://idp.example.com/realms/acme", "token_endpoint": "https://idp.example.com/t", "#
                                 + #""dpop_signing_alg_values_supported": ["ES256"], "jwks_uri": null}"#)
        XCTAssertNil(metadata.authorizationEndpoint)
        XCTAssertNil(metadata.jwksUri)
        XCTAssertEqual(metadata.codeChallengeMethodsSupported, [])
        XCTAssertEqual(metadata.dpopSigningAlgValuesSupported, ["ES256"])
        XCTAssertFalse(metadata.authorizationResponseIssParameterSupported)
    }

    func testIssuerMustMatchExactly() {
        let url = openIDURL.description
        XCTAssertEqual(error(document(["issuer": #""https://idp.example.com/realms/acme/""#])),
                       .issuerMismatch(url: url, expected: issuer, found: "https://idp.example.com/realms/acme/"))
        XCTAssertEqual(error(document(["issuer": #""https://evil.example""#])),
                       .issuerMismatch(url: url, expected: issuer, found: "https://evil.example"))
        XCTAssertEqual(error(document(removing: ["issuer"])), .invalidDocument(url: url, reason: "it has no issuer"))
        XCTAssertEqual(error(document(["issuer": "42"])), .invalidDocument(url: url, reason: "issuer is not a string"))
    }

    func testEndpointsMustBeHTTPSURLs() {
        let url = openIDURL.description
        XCTAssertEqual(error(document(removing: ["token_endpoint"])), .invalidDocument(url: url, reason: "it has no token_endpoint"))
        XCTAssertEqual(error(document(["jwks_uri": #""http://keys.example.com/jwks""#])),
                       .invalidDocument(url: url, reason: "jwks_uri http://keys.example.com/jwks is plain http:// to a host that is not loopback"))
        guard case .invalidDocument(_, let reason)? = error(document(["authorization_endpoint": #""javascript:alert(1)""#])) else {
            return XCTFail("a javascript: endpoint was accepted")
        }
        XCTAssertTrue(reason.hasPrefix("authorization_endpoint is not an absolute http(s) URL"), reason)
        XCTAssertEqual(error(document(["code_challenge_methods_supported": #""S256""#])),
                       .invalidDocument(url: url, reason: "code_challenge_methods_supported is not an array of strings"))
        XCTAssertEqual(error(document(["authorization_response_iss_parameter_supported": #""yes""#])),
                       .invalidDocument(url: url, reason: "authorization_response_iss_parameter_supported is not true or false"))
    }

    func testLoopbackHTTPEndpointsAreAccepted() throws {
        let metadata = try parse(document(["token_endpoint": #""http://127.0.0.1:9000/o/token/""#]))
        XCTAssertEqual(metadata.tokenEndpoint.description, "http://127.0.0.1:9000/o/token/")
        XCTAssertNoThrow(try parse(document(["jwks_uri": #""http://keys.example.com/jwks""#]), allowInsecureHTTP: true))
    }

    func testAnswersThatAreNoDocument() {
        let page = "<html>" + String(repeating: "<p>Welcome to our single-page app</p>", count: 3000) + "</html>"
        guard case .noDocument(issuer, let answers)? = error(page, contentType: "text/html") else { return XCTFail() }
        XCTAssertEqual(answers, ["\(openIDURL) answered HTTP 200 (text/html, \(page.utf8.count) bytes), not a JSON object"])
        XCTAssertEqual(error("not found", status: 404, contentType: "text/plain"),
                       .noDocument(issuer: issuer, answers: ["\(openIDURL) answered HTTP 404 (text/plain, 9 bytes)"]))
    }

    func testOverloadedIdPIsUnavailable() {
        let answer = TokenEndpointReply(status: 503, headers: [("Retry-After", "30")], body: "")
        XCTAssertThrowsError(try ProviderMetadata.parse(answer, from: openIDURL, issuer: issuer, unixTime: 0)) {
            let error = $0 as? DiscoveryError
            XCTAssertEqual(error, .unavailable(url: self.openIDURL.description, reason: "it answered HTTP 503", retryAfter: 30))
            XCTAssertEqual(error?.isTemporary, true)
        }
    }

    // MARK: - Driving a discovery

    func testFallsBackToRFC8414WhenTheOpenIDDocumentIsMissing() throws {
        var discovery = try ProviderDiscovery(issuer: issuer)
        XCTAssertEqual(discovery.firstURL, openIDURL)
        let next = discovery.received(reply(404, "", contentType: nil), unixTime: 0)
        let rfc8414 = HTTPURL(scheme: .https, host: "idp.example.com", path: "/.well-known/oauth-authorization-server/realms/acme")
        XCTAssertEqual(next, .fetch(rfc8414))
        XCTAssertEqual(discovery.currentURL, rfc8414)
        guard case .found(let metadata) = discovery.received(reply(200, document()), unixTime: 0) else { return XCTFail() }
        XCTAssertEqual(metadata.issuer, issuer)
    }

    func testNoDocumentAnywhereSaysWhatEachURLAnswered() throws {
        var discovery = try ProviderDiscovery(issuer: issuer)
        _ = discovery.received(reply(404, "", contentType: nil), unixTime: 0)
        let step = discovery.received(reply(302, "", contentType: nil, headers: [("Location", "https://idp.example.com/login?x=1")]),
                                      unixTime: 0)
        guard case .failed(let error) = step else { return XCTFail("\(step)") }
        XCTAssertEqual(error.description, "no discovery document for issuer \"\(issuer)\": \(openIDURL) answered HTTP 404 "
                       + "(no content type, 0 bytes); https://idp.example.com/.well-known/oauth-authorization-server/realms/acme "
                       + "answered HTTP 302 (no content type, 0 bytes), a redirect to https://idp.example.com/login, which is not followed")
        XCTAssertEqual(error.code, "no_discovery_document")
    }

    func testUnavailableIdPIsNotAskedAtTheNextURL() throws {
        var discovery = try ProviderDiscovery(issuer: issuer)
        XCTAssertEqual(discovery.received(reply(500, "oops", contentType: "text/plain"), unixTime: 0),
                       .failed(.unavailable(url: openIDURL.description, reason: "it answered HTTP 500", retryAfter: nil)))
        var unreachable = try ProviderDiscovery(issuer: issuer)
        XCTAssertEqual(unreachable.failed(.unreachable(reason: "connection refused")),
                       .failed(.unavailable(url: openIDURL.description, reason: "unreachable: connection refused", retryAfter: nil)))
    }

    func testAWrongIssuerIsFinalNotAReasonToTryTheNextURL() throws {
        var discovery = try ProviderDiscovery(issuer: issuer)
        guard case .failed(.issuerMismatch) = discovery.received(reply(200, document(["issuer": #""https://evil.example""#])),
                                                                  unixTime: 0) else { return XCTFail() }
    }
}
