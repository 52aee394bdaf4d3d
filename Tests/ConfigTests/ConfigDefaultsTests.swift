import Config
import Endpoints
import FileTestSupport
import Foundation
import HTTPFields
import OAuth2
import Routing
import SafeText
import XCTest

/// What a key left out means.
final class ConfigDefaultsTests: XCTestCase {
    func testEmptyFileGivesTheDocumentedDefaults() throws {
        let config = try decodeConfig("{}")
        XCTAssertEqual(config.listen, HostPort(host: "127.0.0.1", port: 8180))
        XCTAssertEqual(config.admin, HostPort(host: "127.0.0.1", port: 9180))
        XCTAssertEqual(config.workers, 0)
        XCTAssertEqual(config.identities, [:])
        XCTAssertEqual(config.routes, [])
        XCTAssertTrue(config.accessLog)
        XCTAssertTrue(config.metrics)
        XCTAssertFalse(config.trustForwardedHeaders)
        XCTAssertEqual(config.via, "oauth-relay")
    }

    func testLimitsDefaults() throws {
        let limits = try decodeConfig(#"{ "limits": {} }"#).limits
        XCTAssertEqual(limits.maxHeaderBytes, 65536)
        XCTAssertEqual(limits.maxHeaderCount, 100)
        XCTAssertEqual(limits.headerTimeoutSeconds, 30)
        XCTAssertEqual(limits.idleTimeoutSeconds, 60)
        XCTAssertEqual(limits.upstreamConnectTimeoutSeconds, 5)
        XCTAssertEqual(limits.upstreamResponseTimeoutSeconds, 60)
        XCTAssertEqual(limits.shutdownGraceSeconds, 30)
        XCTAssertEqual(limits.dnsCacheSeconds, 30)
        XCTAssertEqual(limits.maxIdleUpstreamConnections, 128)
        XCTAssertNil(limits.upstreamResponseTotalSeconds)
        XCTAssertEqual(limits.maxUpstreamConnections, 0)
        XCTAssertEqual(limits.upstreamQueueTimeoutSeconds, 10)
    }

    func testTheUpstreamConnectionLimitAndItsQueueTimeoutAreDecodedAndChecked() throws {
        let limits = try decodeConfig(#"{ "limits": { "maxUpstreamConnections": 4, "upstreamQueueTimeoutSeconds": 0.5 } }"#).limits
        XCTAssertEqual(limits.maxUpstreamConnections, 4)
        XCTAssertEqual(limits.upstreamQueueTimeoutSeconds, 0.5)
        XCTAssertThrowsError(try decodeConfig(#"{ "limits": { "maxUpstreamConnections": -1 } }"#)) { error in
            XCTAssertTrue("\(error)".contains("$.limits.maxUpstreamConnections"), "\(error)")
        }
    }

    func testUpstreamResponseTotalSecondsIsDecoded() throws {
        XCTAssertEqual(try decodeConfig(#"{ "limits": { "upstreamResponseTotalSeconds": 2.5 } }"#).limits.upstreamResponseTotalSeconds, 2.5)
    }

    func testASchemaReferenceIsAcceptedAndIgnored() throws {
        for reference in ["oauth-relay.schema.json", "https://example.test/oauth-relay.schema.json", "${UNSET}", ""] {
            let config = try decodeConfig(#"{ "$schema": "\#(reference)", "workers": 2 }"#)
            XCTAssertEqual(config.workers, 2, reference)
        }
    }

    func testLimitsAcceptFractionalSeconds() throws {
        let limits = try decodeConfig(#"{ "limits": { "upstreamConnectTimeoutSeconds": 0.25, "maxHeaderCount": 50 } }"#).limits
        XCTAssertEqual(limits.upstreamConnectTimeoutSeconds, 0.25)
        XCTAssertEqual(limits.maxHeaderCount, 50)
    }

    func testRouteDefaults() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON("")).routes.first)
        XCTAssertEqual(route.index, 0)
        XCTAssertEqual(route.name, "routes[0]")
        XCTAssertEqual(route.match, RouteMatch(host: nil, pathPrefix: "/"))
        XCTAssertNil(route.identity)
        XCTAssertFalse(route.stripPrefix)
        XCTAssertEqual(route.inject, .header(name: "Authorization", prefix: "Bearer"))
        XCTAssertEqual(route.setHeaders, [])
        XCTAssertNil(route.tls)
        XCTAssertEqual(route.retryOnStatus, [401])
    }

    func testRouteIndexAndDefaultNameFollowFilePosition() throws {
        let json = #"{ "routes": [ { "upstream": "http://a", "name": "first" }, { "upstream": "http://b", "match": { "pathPrefix": "/b" } } ] }"#
        let routes = try decodeConfig(json).routes
        XCTAssertEqual(routes.map(\.index), [0, 1])
        XCTAssertEqual(routes.map(\.name), ["first", "routes[1]"])
    }

    func testAdminNullDisablesTheAdminListener() throws {
        XCTAssertNil(try decodeConfig(#"{ "admin": null }"#).admin)
    }

    func testQueryInjectionIsDecoded() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""inject": { "query": "access_token" }"#)).routes.first)
        XCTAssertEqual(route.inject, .query(name: "access_token"))
    }

    func testHeaderInjectionKeepsDefaultPrefixWhenOnlyTheNameIsGiven() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""inject": { "header": "X-Access-Token" }"#)).routes.first)
        XCTAssertEqual(route.inject, .header(name: "X-Access-Token", prefix: "Bearer"))
    }

    func testSetHeadersAreSortedByName() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""setHeaders": { "X-b": "2", "x-A": "1", "Accept": "*/*" }"#)).routes.first)
        XCTAssertEqual(route.setHeaders.map(\.name), ["Accept", "x-A", "X-b"])
        XCTAssertEqual(route.setHeaders.map(\.value), ["*/*", "1", "2"])
    }

    func testPathPrefixIsNormalized() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""match": { "pathPrefix": "/a/./%7euser/%2f" }"#)).routes.first)
        XCTAssertEqual(route.match.pathPrefix, "/a/~user/%2F")
    }

    func testHostPatternIsLowercasedAndWildcardParsed() throws {
        let json = #"""
        { "routes": [ { "upstream": "http://a", "match": { "host": "Orders.LOCAL" } },
                      { "upstream": "http://b", "match": { "host": "*.Example.com" } } ] }
        """#
        let routes = try decodeConfig(json).routes
        XCTAssertEqual(routes.map(\.match.host), [.exact("orders.local"), .wildcard(suffix: "example.com")])
    }

    func testDemoConfigFileIsValid() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Config/demo.json").path
        let config = try ConfigLoader.load(path: path, environment: [:])
        XCTAssertEqual(config.listen, HostPort(host: "127.0.0.1", port: 8180))
        XCTAssertTrue(config.accessLog)
        XCTAssertEqual(config.routes.count, 1)
        XCTAssertEqual(config.routes.first?.match.pathPrefix, "/")
        XCTAssertEqual(config.routes.first?.upstream, UpstreamURL(scheme: .http, host: "127.0.0.1", port: 9001))
        XCTAssertEqual(config.routes.first?.setHeaders, [HTTPField(name: "X-Demo", value: "oauth-relay")])
    }

    func testSidecarExampleIsValidWithItsVariablesSet() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Config/sidecar.json").path
        let environment = ["IDP_TOKEN_URL": "https://idp.example.com/token", "ORDERS_CLIENT_ID": "orders",
                           "ORDERS_CLIENT_SECRET": "secret-from-env"]
        let config = try ConfigLoader.load(path: path, environment: environment)
        XCTAssertEqual(config.identities["orders"]?.clientAuth.secret?.value, "secret-from-env")
        XCTAssertEqual(config.routes.first?.upstream.port, 9001)
    }

    func testLoadingAMissingFileReportsIt() {
        XCTAssertThrowsError(try ConfigLoader.load(path: "/nonexistent/relay.json", environment: [:])) { error in
            XCTAssertEqual((error as? ConfigErrors)?.errors.map(\.message), ["no such file: /nonexistent/relay.json"])
        }
    }

    func testTheCONFIGmdExampleDecodes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("legacy-client-secret", "legacy-secret\n")
        try directory.write("svc-legacy-password", "  hunter2-but-longer  \n")
        try directory.write("idp-ca.pem", "pem")
        try directory.write("internal-ca.pem", "pem")
        let file = try directory.write("relay.json", Self.configMarkdownExample)
        let config = try ConfigLoader.load(path: file, environment: ["ORDERS_CLIENT_SECRET": "orders-secret"])

        let orders = try XCTUnwrap(config.identities["orders"])
        XCTAssertEqual(orders.tokenUrl, HTTPURL(scheme: .https, host: "idp.example.com", path: "/oauth2/token"))
        XCTAssertEqual(orders.grant, .clientCredentials)
        XCTAssertEqual(orders.clientAuth, .basic(id: "orders-relay", secret: Secret("orders-secret")))
        XCTAssertEqual(orders.resource, ["https://orders.internal/"])
        XCTAssertEqual(orders.params, ["tenant": "acme"])
        XCTAssertEqual(orders.headers, ["X-Request-Source": "oauth-relay"])
        XCTAssertEqual(orders.tls?.caFile, directory.path + "/idp-ca.pem")
        let legacy = try XCTUnwrap(config.identities["legacy-user"])
        XCTAssertEqual(legacy.grant, .password(username: "svc-legacy", password: Secret("hunter2-but-longer")))
        XCTAssertEqual(legacy.clientAuth, .basic(id: "legacy", secret: Secret("legacy-secret")))
        XCTAssertEqual(config.routes.map(\.match.host), [.exact("orders.local"), nil])
        XCTAssertEqual(config.routes.first?.upstream, UpstreamURL(scheme: .https, host: "orders.internal", port: 8443))
        XCTAssertEqual(config.routes.first?.tls?.serverName, "orders.internal")
    }

    /// CONFIG.md's example, with the absolute file paths made relative.
    static let configMarkdownExample = #"""
    {
      "listen": "127.0.0.1:8180",
      "admin": "127.0.0.1:9180",
      "workers": 0,
      "limits": {
        "maxHeaderBytes": 65536,
        "maxHeaderCount": 100,
        "headerTimeoutSeconds": 30,
        "idleTimeoutSeconds": 60,
        "upstreamConnectTimeoutSeconds": 5,
        "upstreamResponseTimeoutSeconds": 60
      },
      "identities": {
        "orders": {
          "tokenUrl": "https://idp.example.com/oauth2/token",
          "grant": "client_credentials",
          "clientId": "orders-relay",
          "clientSecret": "${ORDERS_CLIENT_SECRET}",
          "clientAuth": "basic",
          "scope": "orders.read orders.write",
          "audience": "orders-api",
          "resource": ["https://orders.internal/"],
          "params": { "tenant": "acme" },
          "headers": { "X-Request-Source": "oauth-relay" },
          "tls": { "caFile": "idp-ca.pem" }
        },
        "legacy-user": {
          "tokenUrl": "https://idp.example.com/oauth2/token",
          "grant": "password",
          "clientId": "legacy",
          "clientSecretFile": "legacy-client-secret",
          "username": "svc-legacy",
          "passwordFile": "svc-legacy-password"
        }
      },
      "routes": [
        {
          "match": { "host": "orders.local", "pathPrefix": "/api/" },
          "upstream": "https://orders.internal:8443",
          "identity": "orders",
          "stripPrefix": false,
          "inject": { "header": "Authorization", "prefix": "Bearer" },
          "tls": { "caFile": "internal-ca.pem", "serverName": "orders.internal" }
        },
        { "match": { "pathPrefix": "/public/" }, "upstream": "http://127.0.0.1:9001" }
      ]
    }
    """#
}
