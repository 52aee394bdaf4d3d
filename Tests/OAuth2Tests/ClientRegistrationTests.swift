import Crypto
import Endpoints
import JOSE
import JSON
@testable import OAuth2
import SafeText
import XCTest

/// RFC 7591 for an `auto` identity: the method chosen, the request and its body, the answer read.
final class ClientRegistrationTests: XCTestCase {
    private let endpoint = HTTPURL(scheme: .https, host: "as.example.com", path: "/register")
    private let issuer = "https://as.example.com"

    private func browserIdentity(_ configure: (inout AutoSettings) -> Void = { _ in }) -> Identity {
        autoIdentity(configure)
    }

    private func request(method: String = "client_secret_basic", jwks: String? = nil) -> ClientRegistrationRequest {
        ClientRegistrationRequest(identity: browserIdentity(), settings: browserIdentity().auto!, issuer: issuer, endpoint: endpoint,
                                  method: method,
                                  scope: "mcp:read", jwks: jwks)
    }

    private func parse(_ status: Int, _ body: String, contentType: String = "application/json", headers: [(String, String)] = [],
                       request: ClientRegistrationRequest? = nil, pem: Secret? = nil) throws(AutoSetupError) -> RegisteredClient {
        let reply = TokenEndpointReply(status: status, headers: [("Content-Type", contentType)] + headers, body: body)
        return try RegisteredClient.parse(reply, to: request ?? self.request(), issuer: issuer, privateKeyPEM: pem, unixTime: 1000)
    }

    private func refusal(_ status: Int, _ body: String, contentType: String = "application/json", headers: [(String, String)] = [],
                         request: ClientRegistrationRequest? = nil) -> AutoSetupError? {
        do {
            let client = try parse(status, body, contentType: contentType, headers: headers, request: request)
            XCTFail("accepted \(client.clientId)")
            return nil
        } catch {
            return error
        }
    }

    func testMethodChosenFromWhatTheServerLists() throws {
        let table: [(AutoClientAuth, [String], String?)] = [
            (.automatic, [], "none"),
            (.automatic, ["client_secret_basic", "none"], "none"),
            (.automatic, ["client_secret_post", "client_secret_basic"], "client_secret_basic"),
            (.automatic, ["private_key_jwt"], nil),
            (.none, ["client_secret_basic"], nil),
            (.none, [], "none"),
            (.clientSecretBasic, ["none", "client_secret_basic"], "client_secret_basic"),
            (.clientSecretBasic, ["none"], nil),
            (.privateKeyJWT, ["private_key_jwt", "none"], "private_key_jwt"),
            (.privateKeyJWT, [], "private_key_jwt"),
            (.privateKeyJWT, ["client_secret_basic"], nil),
        ]
        for (choice, supported, expected) in table {
            let label = "\(choice) of \(supported)"
            if let expected {
                XCTAssertEqual(try choice.registeredMethod(supported: supported, issuer: issuer), expected, label)
            } else {
                XCTAssertThrowsError(try choice.registeredMethod(supported: supported, issuer: issuer), label) {
                    XCTAssertEqual($0 as? AutoSetupError, .noUsableAuthMethod(issuer: self.issuer, supported: supported))
                }
            }
        }
    }

    func testBrowserRegistrationBody() throws {
        var settings = browserIdentity().auto!
        settings.initialAccessToken = Secret("iat-1")
        settings.allowedIssuers = [issuer]
        settings.clientName = "relay \"dev\""
        let request = ClientRegistrationRequest(identity: browserIdentity(), settings: settings, issuer: issuer, endpoint: endpoint,
                                                method: "none",
                                                scope: "openid mcp", jwks: nil)
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self),
                       #"{"client_name":"relay \"dev\"","redirect_uris":["http://127.0.0.1:8180/.oauth-relay/callback"],"#
                       + #""grant_types":["authorization_code","refresh_token"],"response_types":["code"],"#
                       + #""token_endpoint_auth_method":"none","scope":"openid mcp"}"#)
        XCTAssertEqual(request.authorization?.value, "Bearer iat-1")
    }

    func testTheInitialAccessTokenGoesOnlyToAListedIssuer() throws {
        var settings = browserIdentity().auto!
        settings.initialAccessToken = Secret("iat-1")
        for allowed in [[], ["https://other.example.com"]] {
            settings.allowedIssuers = allowed
            let request = ClientRegistrationRequest(identity: browserIdentity(), settings: settings, issuer: issuer, endpoint: endpoint,
                                                    method: "none", scope: nil, jwks: nil)
            XCTAssertNil(request.authorization, "allowedIssuers \(allowed)")
            XCTAssertNil(request.initialAccessToken)
            XCTAssertTrue(request.initialAccessTokenWithheld)
            let error = refusal(401, #"{"error": "invalid_token"}"#, request: request)
            XCTAssertEqual(error, .initialAccessTokenWithheld(issuer: issuer, refusal: .registrationRefused(
                url: endpoint.description, status: 401, oauthError: "invalid_token", description: nil)))
            XCTAssertEqual(error?.needsConfiguration, true)
            XCTAssertEqual(error?.description, "the registration endpoint https://as.example.com/register refused the registration "
                           + "(HTTP 401) with error invalid_token; the initial access token (auto.initialAccessToken) was withheld: "
                           + "the issuer \"https://as.example.com\" is not listed in auto.allowedIssuers (list it there to send the "
                           + "token to it)")
            XCTAssertEqual(refusal(503, "", request: request)?.isTemporary, true, "an outage is no refusal")
        }
        settings.allowedIssuers = ["https://other.example.com", issuer]
        let listed = ClientRegistrationRequest(identity: browserIdentity(), settings: settings, issuer: issuer, endpoint: endpoint,
                                               method: "none", scope: nil, jwks: nil)
        XCTAssertEqual(listed.authorization?.value, "Bearer iat-1")
        XCTAssertFalse(listed.initialAccessTokenWithheld)
        settings.initialAccessToken = nil
        settings.allowedIssuers = []
        let none = ClientRegistrationRequest(identity: browserIdentity(), settings: settings, issuer: issuer, endpoint: endpoint,
                                             method: "none", scope: nil, jwks: nil)
        XCTAssertFalse(none.initialAccessTokenWithheld, "nothing configured, nothing withheld")
    }

    func testDeviceRegistrationHasNoRedirectAndNoResponseType() throws {
        var identity = browserIdentity()
        identity.grant = .deviceCode(seed: nil)
        let request = ClientRegistrationRequest(identity: identity, settings: identity.auto!, issuer: issuer, endpoint: endpoint,
                                                method: "client_secret_basic", scope: nil, jwks: nil)
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self),
                       #"{"client_name":"oauth-relay","grant_types":["urn:ietf:params:oauth:grant-type:device_code","refresh_token"],"#
                       + #""token_endpoint_auth_method":"client_secret_basic"}"#)
        XCTAssertNil(request.authorization)
    }

    func testPrivateKeyJWTSendsThePublicKeySetAndKeepsThePEM() throws {
        let key = try GeneratedClientKey.make()
        let request = request(method: "private_key_jwt", jwks: key.jwks)
        let body = try XCTUnwrap(JSONValue(parsing: request.body).dictionary)
        let jwk = try JWK(object: try XCTUnwrap(body["jwks"]?["keys"]?.array?.first))
        let privateKey = try PrivateKey(pem: key.pem.value)
        XCTAssertEqual(try jwk.publicKey(), privateKey.publicKey, "the JWK is the PEM's public half")
        XCTAssertEqual(jwk.keyID, jwk.thumbprint, "kid is the RFC 7638 thumbprint")
        XCTAssertFalse(String(decoding: request.body, as: UTF8.self).contains("\"d\""), "no private member")
        XCTAssertEqual(body["token_endpoint_auth_method"], .string("private_key_jwt"))

        let client = try parse(201, #"{"client_id": "c-9", "token_endpoint_auth_method": "private_key_jwt"}"#, request: request, pem: key.pem)
        XCTAssertEqual(client.privateKeyPEM, key.pem)
        guard case .privateKeyJWT(let id, let assertionKey)? = client.clientAuth else { return XCTFail("\(String(describing: client.clientAuth))") }
        XCTAssertEqual(id, "c-9")
        XCTAssertEqual(assertionKey.keyID, jwk.keyID)
        XCTAssertEqual(assertionKey.algorithm, .es256)
    }

    func testAnswer201And200() throws {
        let created = try parse(201, #"""
            {"client_id": "s6BhdRkqt3", "client_secret": "cf136dc3c1fc93f31185e5885805d", "client_id_issued_at": 2893256800,
             "client_secret_expires_at": 2893276800, "registration_access_token": "this.is.an.access.token.value.ffx83",
             "registration_client_uri": "https://as.example.com/register/s6BhdRkqt3", "token_endpoint_auth_method": "client_secret_basic"}
            """#, contentType: "application/json; charset=utf-8")
        XCTAssertEqual(created, RegisteredClient(issuer: issuer, clientId: "s6BhdRkqt3", clientSecret: Secret("cf136dc3c1fc93f31185e5885805d"),
                                                 clientSecretExpiresAt: 2893276800,
                                                 registrationAccessToken: Secret("this.is.an.access.token.value.ffx83"),
                                                 registrationClientUri: HTTPURL(scheme: .https, host: "as.example.com", path: "/register/s6BhdRkqt3"),
                                                 tokenEndpointAuthMethod: "client_secret_basic",
                                                 redirectUri: "http://127.0.0.1:8180/.oauth-relay/callback", registeredAt: 1000))
        XCTAssertEqual(created.clientAuth, .basic(id: "s6BhdRkqt3", secret: Secret("cf136dc3c1fc93f31185e5885805d")))
        // Glewlwyd answers 200; the server's method wins over the one asked for.
        let ok = try parse(200, #"{"client_id": "pub-1", "token_endpoint_auth_method": "none", "client_secret_expires_at": 0}"#)
        XCTAssertEqual(ok.tokenEndpointAuthMethod, "none")
        XCTAssertEqual(ok.clientAuth, .publicClient(id: "pub-1"))
        XCTAssertEqual(try parse(201, #"{"client_id": "p", "client_secret": "s"}"#, request: request(method: "client_secret_basic"))
            .clientAuth, .basic(id: "p", secret: Secret("s")), "the method asked for when the answer names none")
        XCTAssertEqual(try parse(201, #"{"client_id": "p", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post"}"#)
            .clientAuth, .post(id: "p", secret: Secret("s")))
    }

    /// What is refused, and that no refusal quotes a secret.
    func testRefusalTable() throws {
        let url = "https://as.example.com/register"
        let table: [(Int, String, String, [(String, String)], AutoSetupError)] = [
            (400, #"{"error": "invalid_redirect_uri", "error_description": "One or more redirect_uri values are invalid"}"#,
             "application/json", [],
             .registrationRefused(url: url, status: 400, oauthError: "invalid_redirect_uri",
                                  description: "One or more redirect_uri values are invalid")),
            (400, #"{"error": "invalid_client_metadata"}"#, "application/json", [],
             .registrationRefused(url: url, status: 400, oauthError: "invalid_client_metadata", description: nil)),
            (401, "", "text/plain", [], .registrationRefused(url: url, status: 401, oauthError: nil, description: nil)),
            (403, "<html><body>Initial access token required</body></html>", "text/html", [],
             .registrationRefused(url: url, status: 403, oauthError: nil, description: "Initial access token required")),
            (403, #"{"client_secret": "leak"}"#, "application/json", [],
             .registrationRefused(url: url, status: 403, oauthError: nil, description: nil)),
            (302, "", "text/plain", [("Location", "https://login.example.com/?token=x")],
             .registrationRefused(url: url, status: 302, oauthError: nil,
                                  description: "a redirect to https://login.example.com/, which is not followed")),
            (503, "", "text/plain", [("Retry-After", "30")], .unavailable(url: url, reason: "it answered HTTP 503", retryAfter: 30)),
            (429, "", "text/plain", [], .unavailable(url: url, reason: "it answered HTTP 429", retryAfter: nil)),
            (202, #"{"client_id": "x"}"#, "application/json", [],
             .registrationRefused(url: url, status: 202, oauthError: nil, description: #"{"client_id": "x"}"#)),
            (201, #"{"client_id": "x"}"#, "text/html", [],
             .invalidDocument(url: url, reason: "the registration answer is text/html, not application/json")),
            (201, "[1]", "application/json", [], .invalidDocument(url: url, reason: "the registration answer is not a JSON object")),
            (201, #"{"client_secret": "s"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "the registration answer has no client_id")),
            (201, #"{"client_id": ""}"#, "application/json", [], .invalidDocument(url: url, reason: "the registration answer has no client_id")),
            (201, #"{"client_id": 5}"#, "application/json", [],
             .invalidDocument(url: url, reason: "client_id of the registration answer is not a string")),
            (201, #"{"client_id": "x"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "the registration answer has no client_secret for client_secret_basic")),
            (201, #"{"client_id": "x", "token_endpoint_auth_method": "tls_client_auth"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "the server registered the client for token_endpoint_auth_method \"tls_client_auth\", "
                              + "which the relay cannot use")),
            (201, #"{"client_id": "x", "token_endpoint_auth_method": "private_key_jwt"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "the server registered the client for token_endpoint_auth_method \"private_key_jwt\", "
                              + "which the relay cannot use")),
            (201, #"{"client_id": "x", "client_secret": "s", "client_secret_expires_at": "never"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "client_secret_expires_at of the registration answer is not a number")),
            (201, #"{"client_id": "x", "client_secret": "s", "registration_client_uri": "http://as.example.com/r/x"}"#, "application/json", [],
             .insecureURL(what: "the registration_client_uri the registration endpoint \(url) answered", url: "http://as.example.com/r/x")),
            (201, #"{"client_id": "x", "client_secret": "s", "registration_client_uri": "http://127.0.0.1:9/r/x"}"#, "application/json", [],
             .insecureURL(what: "the registration_client_uri the registration endpoint \(url) answered", url: "http://127.0.0.1:9/r/x")),
            (201, #"{"client_id": "x", "client_secret": "s", "registration_client_uri": "https://other.example.com/r/x"}"#, "application/json", [],
             .invalidDocument(url: url, reason: "registration_client_uri of the registration answer (https://other.example.com/r/x) is "
                              + "neither on the registration endpoint's origin nor on the issuer's")),
        ]
        for (status, body, contentType, headers, expected) in table {
            let error = refusal(status, body, contentType: contentType, headers: headers)
            XCTAssertEqual(error, expected, "\(status) \(body)")
            XCTAssertFalse(error?.description.contains("leak") ?? false)
        }
        var secretRequest = request()
        secretRequest.initialAccessToken = Secret("iat-secret")
        XCTAssertEqual(refusal(401, #"{"error": "invalid_token", "error_description": "token iat-secret unknown"}"#, request: secretRequest),
                       .registrationRefused(url: url, status: 401, oauthError: "invalid_token", description: "token … unknown"))
    }

    func testARegistrationClientURIOnTheIssuersOriginOrOverLoopbackHTTPForALoopbackIssuer() throws {
        let onIssuer = try parse(201, #"{"client_id": "x", "client_secret": "s", "registration_client_uri": "https://as.example.com:443/manage/x"}"#)
        XCTAssertEqual(onIssuer.registrationClientUri?.description, "https://as.example.com/manage/x")
        let localEndpoint = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/register")
        var local = request()
        local.endpoint = localEndpoint
        let reply = TokenEndpointReply(status: 201, headers: [("Content-Type", "application/json")],
                                       body: #"{"client_id": "x", "client_secret": "s", "registration_client_uri": "http://127.0.0.1:9/register/x"}"#)
        let client = try RegisteredClient.parse(reply, to: local, issuer: "http://127.0.0.1:9", privateKeyPEM: nil, unixTime: 0)
        XCTAssertEqual(client.registrationClientUri?.description, "http://127.0.0.1:9/register/x")
        XCTAssertThrowsError(try RegisteredClient.parse(reply, to: local, issuer: "https://as.example.com", privateKeyPEM: nil, unixTime: 0),
                             "plain http is for a loopback issuer only")
    }

    func testAStoredClientIsReusedOnlyForItsKeyAndBeforeItsSecretExpires() {
        let key = RegistrationKey(identity: "auto-api.example.com", issuer: issuer, redirectUri: "http://127.0.0.1:8180/.oauth-relay/callback",
                                  clientAuth: .automatic)
        let client = RegisteredClient(issuer: issuer, clientId: "c", clientSecret: Secret("s"), clientSecretExpiresAt: 5000,
                                      tokenEndpointAuthMethod: "client_secret_basic", redirectUri: key.redirectUri, registeredAt: 1)
        XCTAssertTrue(client.isUsable(for: key, at: 4000))
        XCTAssertFalse(client.isUsable(for: key, at: 4950), "expires within the minute")
        var otherIssuer = key
        otherIssuer.issuer = "https://other.example.com"
        XCTAssertFalse(client.isUsable(for: otherIssuer, at: 0))
        var otherCallback = key
        otherCallback.redirectUri = "http://127.0.0.1:9999/.oauth-relay/callback"
        XCTAssertFalse(client.isUsable(for: otherCallback, at: 0))
        var forever = client
        forever.clientSecretExpiresAt = 0
        XCTAssertTrue(forever.isUsable(for: key, at: 1e12))
        var noSecret = client
        noSecret.clientSecret = nil
        XCTAssertFalse(noSecret.isUsable(for: key, at: 0), "client_secret_basic without its secret")
        var brokenKey = client
        brokenKey.tokenEndpointAuthMethod = "private_key_jwt"
        brokenKey.privateKeyPEM = Secret("not a key")
        XCTAssertFalse(brokenKey.isUsable(for: key, at: 0))
    }
}

/// A browser `auto` identity for https://api.example.com/mcp, its callback on 127.0.0.1:8180.
func autoIdentity(_ configure: (inout AutoSettings) -> Void = { _ in }) -> Identity {
    var identity = Identity(name: "auto-api.example.com-mcp", tokenUrl: nil, grant: .authorizationCode(seed: nil))
    identity.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
    var settings = AutoSettings(resource: HTTPURL(scheme: .https, host: "api.example.com", path: "/mcp"))
    configure(&settings)
    identity.auto = settings
    return identity
}
