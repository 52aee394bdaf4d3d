import Endpoints
import JSON
import OAuth2
import XCTest

/// RFC 9728: where a resource's metadata is, and what of it is trusted.
final class ResourceMetadataTests: XCTestCase {
    private let upstream = HTTPURL(scheme: .https, host: "api.example.com", path: "/mcp")
    private let url = "https://api.example.com/.well-known/oauth-protected-resource/mcp"

    private func members(_ json: String) throws -> [String: JSONValue] {
        try XCTUnwrap(JSONValue(parsing: Array(json.utf8)).dictionary)
    }

    private func read(_ json: String, expected: HTTPURL? = nil) throws -> ResourceMetadata {
        try ResourceMetadata(members: members(json), from: url, expectedResource: expected ?? upstream)
    }

    private func refusal(_ json: String, expected: HTTPURL? = nil) throws -> AutoSetupError? {
        do {
            let metadata = try read(json, expected: expected)
            XCTFail("accepted \(metadata)")
            return nil
        } catch {
            return error as? AutoSetupError
        }
    }

    func testWellKnownURLGoesBetweenHostAndPath() {
        let cases: [(HTTPURL, String)] = [
            (HTTPURL(scheme: .https, host: "resource.example.com", path: "/"), "https://resource.example.com/.well-known/oauth-protected-resource"),
            (HTTPURL(scheme: .https, host: "resource.example.com", path: "/resource1"),
             "https://resource.example.com/.well-known/oauth-protected-resource/resource1"),
            (HTTPURL(scheme: .https, host: "api.example.com", path: "/mcp/", query: "x=1"),
             "https://api.example.com/.well-known/oauth-protected-resource/mcp"),
            (HTTPURL(scheme: .http, host: "127.0.0.1", port: 8080, path: "/a/b"),
             "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/b"),
        ]
        for (resource, expected) in cases {
            XCTAssertEqual(ResourceMetadata.wellKnownURL(for: resource).description, expected)
        }
    }

    func testRFC9728Example() throws {
        // RFC 9728 §3.2's example, for the resource https://api.example.com/mcp.
        let metadata = try read(#"""
            {"resource": "https://api.example.com/mcp",
             "authorization_servers": ["https://as1.example.com", "https://as2.example.net"],
             "bearer_methods_supported": ["header", "body"], "scopes_supported": ["profile", "email", "phone"],
             "resource_documentation": "https://api.example.com/resource_documentation.html", "resource_name": "MCP"}
            """#)
        XCTAssertEqual(metadata, ResourceMetadata(resource: "https://api.example.com/mcp",
                                                  authorizationServers: ["https://as1.example.com", "https://as2.example.net"],
                                                  scopesSupported: ["profile", "email", "phone"],
                                                  bearerMethodsSupported: ["header", "body"], resourceName: "MCP"))
        XCTAssertEqual(try read(#"{"resource": "https://api.example.com/mcp"}"#).authorizationServers, [])
    }

    func testResourceComparedAfterSchemeHostPortAndEmptyPathNormalization() throws {
        let root = HTTPURL(scheme: .https, host: "api.example.com", path: "/")
        for same in ["https://api.example.com", "https://api.example.com/", "HTTPS://API.Example.COM:443/", "https://api.example.com:443"] {
            XCTAssertNoThrow(try read(#"{"resource": "\#(same)"}"#, expected: root), same)
        }
        XCTAssertNoThrow(try read(#"{"resource": "https://API.example.com:443/mcp"}"#))
        let loopback = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8080, path: "/r", query: "a=1")
        XCTAssertNoThrow(try read(#"{"resource": "http://127.0.0.1:8080/r?a=1"}"#, expected: loopback))
        for different in ["https://api.example.com/MCP", "https://api.example.com/x/../mcp",
                          "http://api.example.com/mcp", "https://api.example.com:8443/mcp", "https://other.example.com/mcp",
                          "https://api.example.com/mcp?x=1", "https://api.example.com/mcp#f", "api.example.com/mcp"] {
            XCTAssertEqual(try refusal(#"{"resource": "\#(different)"}"#),
                           .resourceMismatch(url: url, expected: "https://api.example.com/mcp", found: different), different)
        }
    }

    func testATrailingSlashIsNoDifference() throws {
        // The upstream URL is kept without its trailing slash: "https://api.example.com/mcp/" is this one.
        for same in ["https://api.example.com/mcp/", "https://api.example.com/mcp"] {
            XCTAssertEqual(try read(#"{"resource": "\#(same)"}"#).resource, same, "kept as written, for RFC 8707")
        }
        XCTAssertEqual(try refusal(#"{"resource": "https://api.example.com/mcp/x"}"#),
                       .resourceMismatch(url: url, expected: "https://api.example.com/mcp", found: "https://api.example.com/mcp/x"))
    }

    func testPathsAreComparedAfterPercentEncodingNormalization() throws {
        let tilde = HTTPURL(scheme: .https, host: "api.example.com", path: "/~mcp")
        for same in ["https://api.example.com/%7Emcp", "https://api.example.com/%7emcp", "https://api.example.com/~mcp"] {
            XCTAssertNoThrow(try read(#"{"resource": "\#(same)"}"#, expected: tilde), same)
        }
        let slash = HTTPURL(scheme: .https, host: "api.example.com", path: "/a%2Fb")
        for same in ["https://api.example.com/a%2fb", "https://api.example.com/a%2Fb", "https://api.example.com/%61%2fb"] {
            XCTAssertNoThrow(try read(#"{"resource": "\#(same)"}"#, expected: slash), same)
        }
        for different in ["https://api.example.com/a/b", "https://api.example.com/a%2Fc"] {
            XCTAssertEqual(try refusal(#"{"resource": "\#(different)"}"#, expected: slash),
                           .resourceMismatch(url: url, expected: "https://api.example.com/a%2Fb", found: different), different)
        }
    }

    /// Every member of the wrong type or URL refused, naming the document and the member.
    func testRefusalTable() throws {
        let resource = #""resource": "https://api.example.com/mcp""#
        let table: [(String, AutoSetupError)] = [
            ("{}", .invalidDocument(url: url, reason: "it has no resource")),
            (#"{"resource": 7}"#, .invalidDocument(url: url, reason: "resource is not a string")),
            (#"{\#(resource), "authorization_servers": "https://as.example.com"}"#,
             .invalidDocument(url: url, reason: "authorization_servers is not an array of strings")),
            (#"{\#(resource), "authorization_servers": [1]}"#,
             .invalidDocument(url: url, reason: "authorization_servers is not an array of strings")),
            (#"{\#(resource), "scopes_supported": "a b"}"#, .invalidDocument(url: url, reason: "scopes_supported is not an array of strings")),
            (#"{\#(resource), "bearer_methods_supported": [true]}"#,
             .invalidDocument(url: url, reason: "bearer_methods_supported is not an array of strings")),
            (#"{\#(resource), "resource_name": ["x"]}"#, .invalidDocument(url: url, reason: "resource_name is not a string")),
            (#"{\#(resource), "authorization_servers": ["https://as.example.com", "http://as.example.com"]}"#,
             .insecureURL(what: "the authorization server in authorization_servers of \(url)", url: "http://as.example.com/")),
            (#"{\#(resource), "authorization_servers": ["https://as.example.com/?tenant=a"]}"#,
             .invalidDocument(url: url, reason: #"authorization_servers holds "https://as.example.com/?tenant=a", which is not an "#
                              + #"issuer identifier: a query (?…) is not allowed in "https://as.example.com/?tenant=a""#)),
            (#"{\#(resource), "authorization_servers": ["as.example.com"]}"#,
             .invalidDocument(url: url, reason: #"authorization_servers holds "as.example.com", which is not an issuer identifier: "#
                              + #""as.example.com" is not an absolute URL (expected http://… or https://…)"#)),
        ]
        for (json, expected) in table {
            XCTAssertEqual(try refusal(json), expected, json)
        }
        // Plain http to a loopback authorization server is for tests.
        XCTAssertNoThrow(try read(#"{\#(resource), "authorization_servers": ["http://127.0.0.1:9000/as", "http://localhost"]}"#))
    }
}
