import Config
import Endpoints
import JOSE
import XCTest

/// `routes[].inbound`: the caller's bearer JWT a route requires. Its defaults, every key, and the
/// refusals that keep a typo or a weak choice (HS256, plain http off loopback, a header the relay
/// manages) from passing.
final class InboundConfigTests: XCTestCase {
    private func inbound(_ body: String, extra: String = "") throws -> InboundRules? {
        try XCTUnwrap(decodeConfig(routeJSON(#""inbound": { \#(body) }"# + extra)).routes.first).inbound
    }

    private func errors(_ body: String, extra: String = "") -> [String] {
        describe(configErrors(routeJSON(#""inbound": { \#(body) }"# + extra)))
    }

    private let minimal = #""issuer": "https://idp.example.test/realms/prod", "audiences": ["orders"]"#

    func testTheSmallestInboundBlockTakesEveryDefault() throws {
        let rules = try XCTUnwrap(inbound(minimal))
        XCTAssertEqual(rules, InboundRules(issuer: "https://idp.example.test/realms/prod", audiences: ["orders"]))
        XCTAssertEqual(rules.algorithms, [.rs256, .ps256, .es256, .edDSA])
        XCTAssertEqual(rules.clockSkewSeconds, 60)
        XCTAssertEqual(rules.maxTokens, 10_000)
        XCTAssertFalse(rules.stripAuthorization)
        XCTAssertNil(rules.jwksUrl)
        XCTAssertNil(try XCTUnwrap(decodeConfig(routeJSON("")).routes.first).inbound)
    }

    func testEveryKeyIsRead() throws {
        let rules = try XCTUnwrap(inbound(#"""
            "issuer": "http://127.0.0.1:9002/realms/dev", "audiences": ["orders", "api://orders", "orders"],
            "jwksUrl": "http://localhost:9002/jwks?v=2", "algorithms": ["ES256", "EdDSA", "ES256"],
            "requiredScopes": ["orders.read", "api:write"], "clockSkewSeconds": 0,
            "claimHeaders": { "sub": "X-Forwarded-User", "email": "X-Forwarded-Email", "groups": "X-Forwarded-Groups" },
            "stripAuthorization": true, "maxTokens": 50
            """#))
        XCTAssertEqual(rules.issuer, "http://127.0.0.1:9002/realms/dev")
        XCTAssertEqual(rules.audiences, ["orders", "api://orders"])
        XCTAssertEqual(rules.jwksUrl?.description, "http://localhost:9002/jwks?v=2")
        XCTAssertEqual(rules.algorithms, [.es256, .edDSA])
        XCTAssertEqual(rules.requiredScopes, ["orders.read", "api:write"])
        XCTAssertEqual(rules.clockSkewSeconds, 0)
        XCTAssertEqual(rules.claimHeaders, [ClaimHeader(claim: "sub", header: "X-Forwarded-User"),
                                            ClaimHeader(claim: "email", header: "X-Forwarded-Email"),
                                            ClaimHeader(claim: "groups", header: "X-Forwarded-Groups")])
        XCTAssertTrue(rules.stripAuthorization)
        XCTAssertEqual(rules.maxTokens, 50)
    }

    func testTLSForTheIssuersFetches() throws {
        let rules = try XCTUnwrap(inbound(minimal + #", "tls": { "serverName": "idp.internal" }"#))
        XCTAssertEqual(rules.tls?.serverName, "idp.internal")
        XCTAssertEqual(errors(#""issuer": "http://127.0.0.1:9002", "audiences": ["a"], "tls": {}"#),
                       ["$.routes[0].inbound.tls: tls is set but the issuer is http://"])
        XCTAssertEqual(errors(minimal + #", "jwksUrl": "http://127.0.0.1:9/jwks", "tls": {}"#),
                       ["$.routes[0].inbound.tls: tls is set but jwksUrl is http://"])
    }

    func testRefusals() {
        let table: [(body: String, expected: [String])] = [
            ("", [#"$.routes[0].inbound.issuer: required key "issuer" is missing"#,
                  #"$.routes[0].inbound.audiences: required key "audiences" is missing"#]),
            (#""issuer": "http://idp.example.test", "audiences": ["a"]"#,
             [#"$.routes[0].inbound.issuer: the issuer's URL must be https:// (plain http:// only to a loopback host, for a local IdP), got "http://idp.example.test""#]),
            (#""issuer": "idp.example.test", "audiences": ["a"]"#,
             [#"$.routes[0].inbound.issuer: "idp.example.test" is not an absolute URL (expected http://… or https://…)"#]),
            (#""issuer": "https://idp.example.test?x=1", "audiences": ["a"]"#,
             [#"$.routes[0].inbound.issuer: a query (?…) is not allowed in "https://idp.example.test?x=1""#]),
            (minimal.replacingOccurrences(of: #"["orders"]"#, with: "[]"),
             ["$.routes[0].inbound.audiences: must list at least one audience: a token's aud must contain one of them"]),
            (minimal.replacingOccurrences(of: #"["orders"]"#, with: #""orders""#),
             ["$.routes[0].inbound.audiences: expected an array, got string"]),
            (minimal.replacingOccurrences(of: #"["orders"]"#, with: #"[""]"#), ["$.routes[0].inbound.audiences[0]: must not be empty"]),
            (minimal + #", "jwksUrl": "http://keys.example.test/jwks""#,
             [#"$.routes[0].inbound.jwksUrl: the JWKS URL must be https:// (plain http:// only to a loopback host, for a local IdP), got "http://keys.example.test/jwks""#]),
            (minimal + #", "algorithms": ["HS256"]"#,
             ["$.routes[0].inbound.algorithms[0]: HS256 is refused: a JWKS publishes public keys, and a public key taken as an HMAC secret is how algorithm confusion forges tokens"]),
            (minimal + #", "algorithms": ["none", "RS512", "rs256"]"#,
             [#"$.routes[0].inbound.algorithms[0]: "none" (an unsigned token) is never accepted"#,
              #"$.routes[0].inbound.algorithms[1]: unknown algorithm "RS512"; use RS256, PS256, ES256 or EdDSA"#,
              #"$.routes[0].inbound.algorithms[2]: unknown algorithm "rs256"; use RS256, PS256, ES256 or EdDSA"#]),
            (minimal + #", "algorithms": []"#,
             ["$.routes[0].inbound.algorithms: must list at least one algorithm (leave the key out for RS256, PS256, ES256 and EdDSA)"]),
            (minimal + #", "requiredScopes": ["orders.read orders.write", "a\"b", ""]"#,
             [#"$.routes[0].inbound.requiredScopes[0]: a scope is printable ASCII without spaces, quotes or backslashes (one scope per entry), got "orders.read orders.write""#,
              #"$.routes[0].inbound.requiredScopes[1]: a scope is printable ASCII without spaces, quotes or backslashes (one scope per entry), got "a"b""#,
              #"$.routes[0].inbound.requiredScopes[2]: a scope is printable ASCII without spaces, quotes or backslashes (one scope per entry), got """#]),
            (minimal + #", "requiredScopes": "orders.read""#, ["$.routes[0].inbound.requiredScopes: expected an array, got string"]),
            (minimal + #", "clockSkewSeconds": 301"#, ["$.routes[0].inbound.clockSkewSeconds: must be a number of seconds from 0 to 300, got 301"]),
            (minimal + #", "clockSkewSeconds": -1"#, ["$.routes[0].inbound.clockSkewSeconds: must be a number of seconds from 0 to 300, got -1"]),
            (minimal + #", "clockSkewSeconds": 1.5"#, ["$.routes[0].inbound.clockSkewSeconds: expected an integer, got 1.5"]),
            (minimal + #", "maxTokens": 0"#, ["$.routes[0].inbound.maxTokens: must be from 1 to 1000000, got 0"]),
            (minimal + #", "maxTokens": 1000001"#, ["$.routes[0].inbound.maxTokens: must be from 1 to 1000000, got 1000001"]),
            (minimal + #", "stripAuthorization": "yes""#, ["$.routes[0].inbound.stripAuthorization: expected a boolean (true or false), got string"]),
            (minimal + #", "claimHeaders": ["sub"]"#, ["$.routes[0].inbound.claimHeaders: expected an object, got array"]),
            (minimal + #", "claimHeaders": { "sub": "X Forwarded User", "": "X-Empty" }"#,
             [#"$.routes[0].inbound.claimHeaders.sub: "X Forwarded User" is not a valid header name"#,
              #"$.routes[0].inbound.claimHeaders[""]: a claim name must not be empty"#]),
            (minimal + #", "claimHeaders": { "email": 7 }"#, ["$.routes[0].inbound.claimHeaders.email: expected a string, got number"]),
            (minimal + #", "claimHeaders": { "a": "Authorization", "b": "host", "c": "Content-Length", "d": "Connection", "e": "X-Forwarded-For", "f": "Cookie", "g": "DPoP", "h": "Via" }"#,
             ["a", "b", "c", "d", "e", "f", "g", "h"].map { claim in
                 let name = ["a": "Authorization", "b": "host", "c": "Content-Length", "d": "Connection", "e": "X-Forwarded-For",
                             "f": "Cookie", "g": "DPoP", "h": "Via"][claim]!
                 return #"$.routes[0].inbound.claimHeaders.\#(claim): "\#(name)" is managed by the relay and cannot be set here"#
             }),
            (minimal + #", "claimHeaders": { "sub": "X-User", "name": "x-user" }"#,
             [#"$.routes[0].inbound.claimHeaders.name: header "x-user" already carries the claim "sub" (header names ignore case)"#]),
            (minimal + #", "jwksURL": "https://idp.example.test/jwks""#,
             [#"$.routes[0].inbound.jwksURL: unknown key "jwksURL" (did you mean "jwksUrl"?)"#]),
        ]
        for (body, expected) in table {
            XCTAssertEqual(errors(body), expected, body)
        }
        XCTAssertEqual(describe(configErrors(routeJSON(#""inbound": "https://idp.example.test""#))),
                       ["$.routes[0].inbound: expected an object, got string"])
    }

    func testAClaimHeaderIsNeitherASetHeaderNorTheInjectedTokensHeader() {
        XCTAssertEqual(errors(minimal + #", "claimHeaders": { "sub": "x-tenant" }"#, extra: #", "setHeaders": { "X-Tenant": "acme" }"#),
                       [#"$.routes[0].inbound.claimHeaders.sub: "x-tenant" is set by setHeaders: a header carries either a claim or a fixed value"#])
        let json = #"""
            { "identities": { "svc": { "tokenUrl": "https://idp/token", "clientId": "c" } },
              "routes": [ { "upstream": "http://127.0.0.1:9001", "identity": "svc", "inject": { "header": "X-Token" },
                            "inbound": { \#(minimal), "claimHeaders": { "sub": "x-token" } } } ] }
            """#
        XCTAssertEqual(describe(configErrors(json)),
                       [#"$.routes[0].inbound.claimHeaders.sub: "x-token" carries the injected token and cannot also carry a claim"#])
    }

    // MARK: Opaque tokens and DPoP

    private func withIdentities(_ inbound: String, routeIdentity: String? = "svc") -> String {
        #"""
        { "identities": { "svc": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" },
                          "other": { "tokenUrl": "https://idp/token", "clientId": "o", "clientSecret": "s" },
                          "public": { "tokenUrl": "https://idp/token", "clientId": "p", "clientAuth": "none" } },
          "routes": [ { "upstream": "http://127.0.0.1:9001"\#(routeIdentity.map { #", "identity": "\#($0)""# } ?? ""),
                        "inbound": { \#(minimal), \#(inbound) } } ] }
        """#
    }

    func testIntrospectionAndDPoPKeysAndTheirDefaults() throws {
        let rules = try XCTUnwrap(inbound(minimal))
        XCTAssertNil(rules.introspection)
        XCTAssertEqual(rules.dpop, InboundDPoP(mode: .allowed, windowSeconds: 60, algorithms: [.es256, .rs256, .ps256, .edDSA]))
        let asRoute = try XCTUnwrap(decodeConfig(withIdentities(#""introspectionUrl": "https://idp.example.test/introspect""#)).routes.first?.inbound)
        XCTAssertEqual(asRoute.introspection, InboundIntrospection(url: try HTTPURL(absolute: "https://idp.example.test/introspect"),
                                                                    identity: "svc", cacheSeconds: 300))
        let named = try XCTUnwrap(decodeConfig(withIdentities(#"""
            "introspectionIdentity": "other", "introspectionCacheSeconds": 0, "dpop": "required", "dpopWindowSeconds": 5,
            "dpopAlgorithms": ["EdDSA", "ES256"]
            """#, routeIdentity: nil)).routes.first?.inbound)
        XCTAssertEqual(named.introspection, InboundIntrospection(url: nil, identity: "other", cacheSeconds: 0), "discovered endpoint")
        XCTAssertEqual(named.dpop, InboundDPoP(mode: .required, windowSeconds: 5, algorithms: [.edDSA, .es256]))
        XCTAssertEqual(try XCTUnwrap(inbound(minimal + #", "dpop": "refused""#)).dpop.mode, .refused)
    }

    func testIntrospectionAndDPoPRefusals() {
        let table: [(inbound: String, routeIdentity: String?, expected: [String])] = [
            (#""introspectionUrl": "https://idp.example.test/introspect""#, nil,
             [#"$.routes[0].inbound.introspectionUrl: introspection asks as an identity's client: set introspectionIdentity, or give the route an identity"#]),
            (#""introspectionUrl": "http://idp.example.test/introspect""#, "svc",
             [#"$.routes[0].inbound.introspectionUrl: the introspection URL must be https:// (plain http:// only to a loopback host, for a local IdP), got "http://idp.example.test/introspect""#]),
            (#""introspectionIdentity": "nobody""#, "svc", [#"$.routes[0].inbound.introspectionIdentity: unknown identity "nobody""#]),
            (#""introspectionIdentity": """#, "svc", ["$.routes[0].inbound.introspectionIdentity: must not be empty"]),
            (#""introspectionIdentity": "public""#, "svc",
             ["$.routes[0].inbound.introspectionIdentity: identity public cannot ask the introspection endpoint: it has no client id with a secret, key or assertion to authenticate with (RFC 7662 §2.1)"]),
            (#""introspectionCacheSeconds": 60"#, "svc",
             ["$.routes[0].inbound.introspectionCacheSeconds: introspectionCacheSeconds needs introspectionUrl or introspectionIdentity (introspection is off)"]),
            (#""introspectionIdentity": "svc", "introspectionCacheSeconds": 86401"#, "svc",
             ["$.routes[0].inbound.introspectionCacheSeconds: must be a number of seconds from 0 to 86400, got 86401"]),
            (#""dpop": "optional""#, "svc", [#"$.routes[0].inbound.dpop: expected one of "allowed", "required", "refused", got "optional""#]),
            (#""dpop": true"#, "svc", ["$.routes[0].inbound.dpop: expected a string, got boolean"]),
            (#""dpopWindowSeconds": 0"#, "svc", ["$.routes[0].inbound.dpopWindowSeconds: must be a number of seconds from 1 to 300, got 0"]),
            (#""dpopWindowSeconds": 301"#, "svc", ["$.routes[0].inbound.dpopWindowSeconds: must be a number of seconds from 1 to 300, got 301"]),
            (#""dpopAlgorithms": ["HS256"]"#, "svc",
             ["$.routes[0].inbound.dpopAlgorithms[0]: HS256 is refused: a DPoP proof is signed with the public key in its own header, and a shared secret there proves nothing"]),
            (#""dpopAlgorithms": ["none"]"#, "svc", [#"$.routes[0].inbound.dpopAlgorithms[0]: "none" (an unsigned token) is never accepted"#]),
            (#""dpopAlgorithms": []"#, "svc",
             ["$.routes[0].inbound.dpopAlgorithms: must list at least one algorithm (leave the key out for RS256, PS256, ES256 and EdDSA)"]),
            (#""dpopWindow": 30"#, "svc", [#"$.routes[0].inbound.dpopWindow: unknown key "dpopWindow""#]),
        ]
        for (body, routeIdentity, expected) in table {
            XCTAssertEqual(describe(configErrors(withIdentities(body, routeIdentity: routeIdentity))), expected, body)
        }
    }

    /// A proof's `htu` is checked against the Host the client sent: a route taking DPoP on a
    /// listener that serves any Host name would take a proof made for another server.
    func testDPoPOnAListenerThatServesAnyHostNeedsHostsOrMatchHost() throws {
        func config(_ top: String, route: String = "", dpop: String = "") -> String {
            #"{ \#(top) "routes": [ { "upstream": "http://127.0.0.1:9001"\#(route), "inbound": { \#(minimal)\#(dpop) } } ] }"#
        }
        XCTAssertEqual(describe(configErrors(config(#""listen": "0.0.0.0:8080","#))), [
            #"$.routes[0].inbound: route routes[0] takes DPoP proofs (dpop "allowed") and listen 0.0.0.0:8080 serves it under any Host name: a proof names the URI it is for by the Host the client sends, so a proof made for another server could be used here. Set "hosts" to the names clients use, or the route's match.host, or "dpop": "refused""#,
        ])
        XCTAssertEqual(describe(configErrors(config(#""listen": "[::]:8080","#, dpop: #", "dpop": "required""#))), [
            #"$.routes[0].inbound.dpop: route routes[0] takes DPoP proofs (dpop "required") and listen [::]:8080 serves it under any Host name: a proof names the URI it is for by the Host the client sends, so a proof made for another server could be used here. Set "hosts" to the names clients use, or the route's match.host, or "dpop": "refused""#,
        ])
        // Each of these names the Host a proof may be for, or takes no proof.
        XCTAssertNoThrow(try decodeConfig(config(#""listen": "0.0.0.0:8080", "hosts": ["orders.example.test"],"#)))
        XCTAssertNoThrow(try decodeConfig(config(#""listen": "0.0.0.0:8080","#, route: #", "match": { "host": "orders.example.test" }"#)))
        XCTAssertNoThrow(try decodeConfig(config(#""listen": "0.0.0.0:8080","#, dpop: #", "dpop": "refused""#)))
        XCTAssertNoThrow(try decodeConfig(config(#""listen": "127.0.0.1:8080","#)))
    }
}
