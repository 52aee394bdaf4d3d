import Config
import Endpoints
import FileTestSupport
import OAuth2
import SafeText
import XCTest

/// Routes with `"identity": "auto"` and the top-level `auto` object: the identity made for each
/// upstream, what `auto` sets in it, and every refusal with its JSON path.
final class AutoConfigTests: XCTestCase {
    private static let route = #"{ "upstream": "https://api.example.com", "identity": "auto" }"#

    /// A config listening on `listen`, with `auto` (an object's body) when given, and `routes`.
    private func config(listen: String = "127.0.0.1:8180", auto: String? = nil, routes: [String] = [route],
                        identities: String? = nil) -> String {
        var members = [#""listen": "\#(listen)""#]
        if let auto { members.append(#""auto": { \#(auto) }"#) }
        if let identities { members.append(#""identities": { \#(identities) }"#) }
        members.append(#""routes": [ \#(routes.joined(separator: ", ")) ]"#)
        return "{ " + members.joined(separator: ", ") + " }"
    }

    func testAnAutoRouteGetsAPersonsIdentityForItsUpstreamWithTheDefaultRedirectURI() throws {
        let decoded = try decodeConfig(config())
        XCTAssertEqual(decoded.routes[0].identity, "auto-api.example.com")
        XCTAssertNil(decoded.auto)
        let identity = try XCTUnwrap(decoded.identities["auto-api.example.com"])
        XCTAssertEqual(identity.grant, .authorizationCode(seed: nil))
        XCTAssertEqual(identity.clientAuth, .unidentified)
        XCTAssertNil(identity.issuer)
        XCTAssertNil(identity.tokenUrl)
        XCTAssertNil(identity.scope)
        XCTAssertEqual(identity.resource, ["https://api.example.com"])
        XCTAssertEqual(identity.redirectUri?.description, "http://127.0.0.1:8180/.oauth-relay/callback")
        XCTAssertFalse(identity.allowRemoteUse)
        XCTAssertEqual(identity.loginTimeoutSeconds, 600)
        XCTAssertEqual(identity.credentialFiles, [])
        XCTAssertEqual(identity.auto, AutoSettings(resource: HTTPURL(scheme: .https, host: "api.example.com")))
    }

    func testTheAutoObjectSetsEveryIdentityItMakes() throws {
        let auto = #"""
            "allowedIssuers": ["https://idp.example.com/realms/a", "http://127.0.0.1:9000"], "clientName": "my relay",
            "clientAuth": "private_key_jwt", "initialAccessToken": "${IAT}", "scope": ["mcp.read", "mcp.write"],
            "allowRemoteUse": true, "redirectUri": "http://localhost:8180/back", "loginTimeoutSeconds": 120
            """#
        let routes = [Self.route, #"{ "match": { "pathPrefix": "/b/" }, "upstream": "https://127.0.0.1:9001/mcp", "identity": "auto", "# +
                      #""tls": { "serverName": "ignored.example" } }"#]
        let decoded = try decodeConfig(config(listen: "0.0.0.0:8180", auto: auto, routes: routes), environment: ["IAT": "iat-value"])
        XCTAssertEqual(decoded.routes.map(\.identity), ["auto-api.example.com", "auto-127.0.0.1-9001-mcp"])
        let second = try XCTUnwrap(decoded.identities["auto-127.0.0.1-9001-mcp"])
        XCTAssertEqual(second.scope, "mcp.read mcp.write")
        XCTAssertEqual(second.resource, ["https://127.0.0.1:9001/mcp"])
        XCTAssertEqual(second.redirectUri?.description, "http://localhost:8180/back")
        XCTAssertTrue(second.allowRemoteUse)
        XCTAssertEqual(second.loginTimeoutSeconds, 120)
        var settings = AutoSettings(resource: HTTPURL(scheme: .https, host: "127.0.0.1", port: 9001, path: "/mcp"),
                                    allowedIssuers: ["https://idp.example.com/realms/a", "http://127.0.0.1:9000"], clientName: "my relay",
                                    clientAuth: .privateKeyJWT, initialAccessToken: Secret("iat-value"), scope: "mcp.read mcp.write")
        settings.resourceTLS = decoded.routes[1].tls
        XCTAssertNotNil(settings.resourceTLS)
        XCTAssertEqual(second.auto, settings, "the route's tls is the resource's")
        XCTAssertNil(try XCTUnwrap(decoded.identities["auto-api.example.com"]).auto?.resourceTLS)
        XCTAssertEqual(decoded.auto?.grant, .authorizationCode)
    }

    func testADeviceLoginNeedsNoRedirectURINorFixedPort() throws {
        let identity = try XCTUnwrap(decodeConfig(config(listen: "127.0.0.1:0", auto: #""grant": "device_code""#))
            .identities["auto-api.example.com"])
        XCTAssertEqual(identity.grant, .deviceCode(seed: nil))
        XCTAssertNil(identity.redirectUri)
    }

    func testTheInitialAccessTokenFileIsACredentialFileAndARotationKeepsTheIdentity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("iat", "first\n")
        let json = config(auto: #""initialAccessTokenFile": "iat""#)
        let before = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).identities["auto-api.example.com"])
        XCTAssertEqual(before.auto?.initialAccessToken, Secret("first"))
        XCTAssertEqual(before.credentialFiles, [CredentialFile(role: .initialAccessToken, path: path, key: "initialAccessTokenFile")])
        XCTAssertEqual(try before.withCredential(.initialAccessToken, content: "second").auto?.initialAccessToken, Secret("second"))
        _ = try directory.write("iat", "second")
        let after = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).identities["auto-api.example.com"])
        XCTAssertTrue(before.hasSameSettings(as: after), "a rotated initial access token is the same identity: a reload keeps its login")
        XCTAssertTrue(after.hasSameSettings(as: try decodeConfig(json, baseDirectory: directory.path).identities["auto-api.example.com"]!))
        let otherScope = try decodeConfig(config(auto: #""initialAccessTokenFile": "iat", "scope": "x""#), baseDirectory: directory.path)
        XCTAssertFalse(after.hasSameSettings(as: try XCTUnwrap(otherScope.identities["auto-api.example.com"])))
    }

    func testAnExpiredInitialAccessTokenIsWarnedOfOnceAtItsKey() throws {
        let expired = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.c2ln"  // {"alg":"HS256"}.{"exp":1}
        let routes = [Self.route, #"{ "match": { "pathPrefix": "/b/" }, "upstream": "https://other.example.com", "identity": "auto" }"#]
        let decoded = try decodeConfig(config(auto: #""initialAccessTokenFile": "iat""#, routes: routes), besideFiles: ["iat": expired]).get()
        XCTAssertEqual(decoded.identities.count, 2)
        let warnings = decoded.expiredCredentialWarnings(at: 1_000_000)
        XCTAssertEqual(warnings.count, 1, "\(warnings)")
        XCTAssertTrue(warnings.first?.hasPrefix("$.auto.initialAccessTokenFile: ") ?? false, "\(warnings)")
        XCTAssertFalse(warnings.joined().contains(expired))
    }

    func testRoutesToOneUpstreamShareOneIdentity() throws {
        let routes = [Self.route, #"{ "match": { "pathPrefix": "/other/" }, "upstream": "https://API.example.com:443/", "identity": "auto" }"#]
        let decoded = try decodeConfig(config(routes: routes))
        XCTAssertEqual(decoded.routes.map(\.identity), ["auto-api.example.com", "auto-api.example.com"])
        XCTAssertEqual(decoded.identities.keys.sorted(), ["auto-api.example.com"])
    }

    func testNamesComeFromHostPortAndPath() throws {
        let table: [(upstream: String, name: String)] = [
            ("https://api.example.com", "auto-api.example.com"),
            ("https://api.example.com:443/", "auto-api.example.com"),
            ("https://api.example.com:8080", "auto-api.example.com-8080"),
            ("https://api.example.com:80", "auto-api.example.com-80"),
            ("https://api.example.com/v1/mcp/", "auto-api.example.com-v1-mcp"),
            ("http://[::1]:9001/mcp", "auto-__1-9001-mcp"),
            ("https://[fd00::5]", "auto-fd00__5"),
            ("http://127.0.0.1:9001/a~b/c%20d", "auto-127.0.0.1-9001-a_b-c_20d"),
            ("https://My-Host.Example/Tools_v2", "auto-my-host.example-Tools_v2"),
        ]
        for (upstream, name) in table {
            let route = #"{ "upstream": "\#(upstream)", "identity": "auto" }"#
            XCTAssertEqual(try decodeConfig(config(routes: [route])).identities.keys.sorted(), [name], upstream)
        }
    }

    func testALongNameIsCutTo100CharactersEndingInTheUpstreamsHash() throws {
        let segment = String(repeating: "a", count: 40)
        let long = "https://api.example.com/\(segment)/\(segment)/x"
        let cut = "auto-api.example.com-\(segment)-\(segment)-x"
        XCTAssertEqual(cut.count, 104)
        // The hash: the first 4 bytes of SHA-256("https://api.example.com/aaa…/aaa…/x"), in hex.
        let table: [(upstream: String, name: String)] = [
            ("https://api.example.com/\(segment)/\(String(segment.dropLast(2)))", "auto-api.example.com-\(segment)-\(String(segment.dropLast(2)))"),
            (long, String(cut.prefix(91)) + "-d1508756"),
            (long + "y", String(cut.prefix(91)) + "-6c290ddd"),
        ]
        for (upstream, name) in table {
            let route = #"{ "upstream": "\#(upstream)", "identity": "auto" }"#
            let names = try decodeConfig(config(routes: [route])).identities.keys.sorted()
            XCTAssertEqual(names, [name], upstream)
            XCTAssertLessThanOrEqual(names.first?.count ?? 0, 100)
        }
        XCTAssertEqual(table[0].name.count, 100, "100 characters are kept whole")
        XCTAssertNotEqual(table[1].name, table[2].name, "upstreams cut the same get different names")
    }

    func testAutoKeyRefusals() {
        let table: [(auto: String, expected: [String])] = [
            (#""allowedIssuer": ["https://idp.example.com"]"#, [#"$.auto.allowedIssuer: unknown key "allowedIssuer" (did you mean "allowedIssuers"?)"#]),
            (#""allowedIssuers": "https://idp.example.com""#, ["$.auto.allowedIssuers: expected an array, got string"]),
            (#""allowedIssuers": []"#, ["$.auto.allowedIssuers: must list at least one issuer; leave allowedIssuers out to allow any https issuer (only when every listener is loopback)"]),
            (#""allowedIssuers": [1]"#, ["$.auto.allowedIssuers[0]: expected a string, got number"]),
            (#""allowedIssuers": ["http://idp.example.com"]"#, [#"$.auto.allowedIssuers[0]: an issuer must be an https URL (http only to a loopback host), got "http://idp.example.com""#]),
            (#""allowedIssuers": ["https://idp.example.com?tenant=a"]"#, [#"$.auto.allowedIssuers[0]: a query (?…) is not allowed in "https://idp.example.com?tenant=a""#]),
            (#""allowedIssuers": ["https://idp.example.com#a"]"#, [#"$.auto.allowedIssuers[0]: a fragment (#…) is not allowed in "https://idp.example.com#a""#]),
            (#""allowedIssuers": ["idp.example.com"]"#, [#"$.auto.allowedIssuers[0]: "idp.example.com" is not an absolute URL (expected http://… or https://…)"#]),
            (#""allowedIssuers": ["https://a.example", "https://a.example"]"#, [#"$.auto.allowedIssuers[1]: "https://a.example" is listed twice"#]),
            (#""allowedIssuers": ["HTTPS://idp.example.com"]"#, [#"$.auto.allowedIssuers[0]: "HTTPS://idp.example.com" is not in canonical form (lowercase scheme and host, no default port, no trailing slash after a path): write "https://idp.example.com", as the server publishes its issuer"#]),
            (#""allowedIssuers": ["https://IdP.Example.com/realms/A"]"#, [#"$.auto.allowedIssuers[0]: "https://IdP.Example.com/realms/A" is not in canonical form (lowercase scheme and host, no default port, no trailing slash after a path): write "https://idp.example.com/realms/A", as the server publishes its issuer"#]),
            (#""allowedIssuers": ["https://idp.example.com:443"]"#, [#"$.auto.allowedIssuers[0]: "https://idp.example.com:443" is not in canonical form (lowercase scheme and host, no default port, no trailing slash after a path): write "https://idp.example.com", as the server publishes its issuer"#]),
            (#""allowedIssuers": ["https://idp.example.com/realms/a/"]"#, [#"$.auto.allowedIssuers[0]: "https://idp.example.com/realms/a/" is not in canonical form (lowercase scheme and host, no default port, no trailing slash after a path): write "https://idp.example.com/realms/a", as the server publishes its issuer"#]),
            (#""allowedIssuers": ["http://LOCALHOST:9000"]"#, [#"$.auto.allowedIssuers[0]: "http://LOCALHOST:9000" is not in canonical form (lowercase scheme and host, no default port, no trailing slash after a path): write "http://localhost:9000", as the server publishes its issuer"#]),
            (#""clientName": """#, ["$.auto.clientName: must not be empty"]),
            (#""clientName": 3"#, ["$.auto.clientName: expected a string, got number"]),
            (#""clientAuth": "basic""#, [#"$.auto.clientAuth: expected one of "automatic", "none", "client_secret_basic" or "private_key_jwt", got "basic""#]),
            (#""initialAccessToken": """#, ["$.auto.initialAccessToken: must not be empty"]),
            (#""initialAccessToken": "a", "initialAccessTokenFile": "iat""#, ["$.auto.initialAccessTokenFile: set either initialAccessToken or initialAccessTokenFile, not both"]),
            (#""initialAccessTokenFile": "missing""#, ["$.auto.initialAccessTokenFile: no such file: /nonexistent/missing"]),
            (#""initialAccessToken": "${UNSET_IAT}""#, [#"$.auto.initialAccessToken: environment variable UNSET_IAT is not set"#]),
            (#""scope": 5"#, ["$.auto.scope: expected a string or an array of strings, got number"]),
            (#""grant": "client_credentials""#, [#"$.auto.grant: expected "authorization_code" or "device_code" (a person logs in), got "client_credentials""#]),
            (#""allowRemoteUse": "yes""#, ["$.auto.allowRemoteUse: expected a boolean (true or false), got string"]),
            (#""redirectUri": "http://127.0.0.1:8180/cb?x=1""#, [#"$.auto.redirectUri: a query (?…) is not allowed in "http://127.0.0.1:8180/cb?x=1""#]),
            (#""redirectUri": "http://127.0.0.1:9999/cb""#, ["$.auto.redirectUri: http://127.0.0.1:9999/cb is served by no listener of this relay (it listens on http://127.0.0.1:8180); the relay serves the login callback itself, so the redirect URI must name its listen or listenTls address and port"]),
            (#""grant": "device_code", "redirectUri": "http://127.0.0.1:8180/cb""#, ["$.auto.redirectUri: redirectUri is only used by the authorization_code grant, not by the device_code grant auto.grant sets"]),
            (#""loginTimeoutSeconds": 0"#, ["$.auto.loginTimeoutSeconds: must be a number of seconds greater than 0, got 0"]),
        ]
        for (auto, expected) in table {
            XCTAssertEqual(describe(configErrors(config(auto: auto))), expected, auto)
        }
        XCTAssertEqual(describe(configErrors(#"{ "auto": true }"#)), ["$.auto: expected an object, got boolean"])
        let canonical = #""allowedIssuers": ["https://idp.example.com", "https://tenant.example.com/", "https://idp.example.com:8443/realms/a", "http://[::1]:9000/as"]"#
        XCTAssertEqual(try decodeConfig(config(auto: canonical)).auto?.allowedIssuers,
                       ["https://idp.example.com", "https://tenant.example.com/", "https://idp.example.com:8443/realms/a", "http://[::1]:9000/as"])
    }

    func testAutoRouteRefusals() {
        let secure = #"{ "upstream": "https://localhost", "identity": "auto" }"#
        let other = #"{ "match": { "pathPrefix": "/b/" }, "upstream": "http://localhost", "identity": "auto" }"#
        let configured = #""auto-api.example.com": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" }"#
        let table: [(json: String, expected: [String])] = [
            (config(listen: "127.0.0.1:0"), ["$.auto.redirectUri: the default redirect URI needs a fixed listen port (listen has port 0); set auto.redirectUri"]),
            (config(routes: [secure, other]), [#"$.routes[1].identity: "auto" makes identity auto-localhost for http://localhost, the name routes[0] gets for https://localhost: one identity cannot stand for two upstreams; configure one of them as an identity of its own"#]),
            (config(routes: [#"{ "upstream": "http://api.example.com/mcp", "identity": "auto" }"#]),
             [#"$.routes[0].identity: identity "auto" needs an https upstream (plain http only to a loopback host), not http://api.example.com/mcp"#]),
            (config(routes: [#"{ "upstream": "http://10.0.0.5:8080", "identity": "auto" }"#]),
             [#"$.routes[0].identity: identity "auto" needs an https upstream (plain http only to a loopback host), not http://10.0.0.5:8080"#]),
            (config(routes: [Self.route, #"{ "match": { "pathPrefix": "/b/" }, "upstream": "https://api.example.com/a-b", "identity": "auto" }"#,
                             #"{ "match": { "pathPrefix": "/c/" }, "upstream": "https://api.example.com/a/b", "identity": "auto" }"#]),
             [#"$.routes[2].identity: "auto" makes identity auto-api.example.com-a-b for https://api.example.com/a/b, the name routes[1] gets for https://api.example.com/a-b: one identity cannot stand for two upstreams; configure one of them as an identity of its own"#]),
            (config(routes: [#"{ "upstream": "https://api.example.com:8443", "identity": "auto" }"#,
                             #"{ "match": { "pathPrefix": "/b/" }, "upstream": "https://api.example.com/8443", "identity": "auto" }"#]),
             [#"$.routes[1].identity: "auto" makes identity auto-api.example.com-8443 for https://api.example.com/8443, the name routes[0] gets for https://api.example.com:8443: one identity cannot stand for two upstreams; configure one of them as an identity of its own"#]),
            (config(routes: [Self.route], identities: configured),
             [#"$.routes[0].identity: "auto" makes identity auto-api.example.com for https://api.example.com, but identities.auto-api.example.com is configured too; rename that identity"#]),
            (config(routes: [Self.route, #"{ "match": { "pathPrefix": "/b/" }, "upstream": "https://api.example.com", "identity": "auto", "tls": { "serverName": "x.example" } }"#]),
             ["$.routes[1].identity: routes[0] has the same upstream with other tls settings; the identity made for an upstream asks it with one TLS configuration: give the routes the same tls"]),
            (config(routes: [#"{ "upstream": "https://api.example.com", "identity": "auto", "tls": { "insecureSkipVerify": true } }"#]),
             [#"$.routes[0].identity: identity "auto" on a route with tls.insecureSkipVerify needs auto.allowedIssuers: the upstream's certificate is not verified, so whoever answers in its place could name any authorization server"#]),
            (config(routes: [Self.route], identities: #""auto": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" }"#),
             [#"$.identities.auto: the identity name "auto" is reserved: a route with "identity": "auto" gets an identity made for its upstream; rename this one"#]),
            (#"{ "identities": { "auto": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" } } }"#,
             [#"$.identities.auto: the identity name "auto" is reserved: a route with "identity": "auto" gets an identity made for its upstream; rename this one"#]),
            (config(routes: [#"{ "upstream": "https://api.example.com", "identity": "Auto" }"#]),
             [#"$.routes[0].identity: unknown identity "Auto" (did you mean "auto"?); no identities are defined"#]),
            (config(routes: [#"{ "upstream": "https://api.example.com", "identity": "auto", "certificateBoundUpstream": true }"#]),
             ["$.routes[0].certificateBoundUpstream: identity auto-api.example.com presents no client certificate to its token endpoint (identities.auto-api.example.com.tls.clientCert), so its tokens are not bound to one (RFC 8705) and there is none to present upstream"]),
            (config(routes: [#"{ "upstream": "https://api.example.com", "identity": "auto", "inbound": { "issuer": "https://idp.example.com", "audiences": ["a"], "introspectionUrl": "https://idp.example.com/introspect" } }"#]),
             ["$.routes[0].inbound.introspectionUrl: identity auto-api.example.com cannot ask the introspection endpoint: it has no client id with a secret, key or assertion to authenticate with (RFC 7662 §2.1)"]),
        ]
        for (json, expected) in table {
            XCTAssertEqual(describe(configErrors(json)), expected, json)
        }
    }

    func testAnAutoRouteOnANetworkListenerNeedsAllowRemoteUseAndAllowedIssuers() {
        let remoteUse = #"$.routes[0].identity: identity auto-api.example.com acts for a person (authorization_code grant) and route routes[0] offers its token on http://0.0.0.0:8180, which other machines can reach: anyone who reaches that listener would act as the person logged in. Listen on a loopback address, or set "auto.allowRemoteUse": true to accept that"#
        let issuers = #"$.auto.allowedIssuers: route routes[0] offers the token of identity auto-api.example.com ("identity": "auto") on http://0.0.0.0:8180, which other machines can reach: list the authorization servers it may use in auto.allowedIssuers (any https issuer the upstream names is accepted only when every listener is loopback)"#
        let listen = "0.0.0.0:8180"
        XCTAssertEqual(describe(configErrors(config(listen: listen))), [remoteUse, issuers])
        XCTAssertEqual(describe(configErrors(config(listen: listen, auto: #""allowRemoteUse": true"#))), [issuers])
        XCTAssertEqual(describe(configErrors(config(listen: listen, auto: #""allowedIssuers": ["https://idp.example.com"]"#))), [remoteUse])
        XCTAssertNoThrow(try decodeConfig(config(listen: listen, auto: #""allowRemoteUse": true, "allowedIssuers": ["https://idp.example.com"]"#)))
        XCTAssertNoThrow(try decodeConfig(config(auto: #""scope": "openid""#)), "on loopback any https issuer; no issuer needed for openid yet")
        let unverified = #"{ "upstream": "https://api.example.com", "identity": "auto", "tls": { "insecureSkipVerify": true } }"#
        XCTAssertNoThrow(try decodeConfig(config(auto: #""allowedIssuers": ["https://idp.example.com"]"#, routes: [unverified])),
                         "an unverified upstream with the issuers listed")
    }

    func testAutoSettingsWithoutAnAutoRouteAreWarnedOf() throws {
        let unused = try decodeConfig(config(auto: #""clientName": "x""#, routes: [#"{ "upstream": "https://api.example.com" }"#]))
        XCTAssertEqual(unused.unusedAutoWarnings, [#"$.auto: no route has "identity": "auto", so these settings are not used"#])
        XCTAssertEqual(try decodeConfig(config(auto: #""clientName": "x""#)).unusedAutoWarnings, [])
        XCTAssertEqual(try decodeConfig(config()).unusedAutoWarnings, [])
    }
}
