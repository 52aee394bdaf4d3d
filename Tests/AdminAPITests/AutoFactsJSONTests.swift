@testable import AdminAPI
import Endpoints
import Foundation
import OAuth2
import XCTest

/// `/identities`' `auto` and `pendingStepUp` members: every fact and its source, no secret.
final class AutoFactsJSONTests: XCTestCase {
    func testEveryFactAndItsSourceIsShown() throws {
        let facts = AutoFacts(resource: "https://api.example.com/mcp",
                              resourceMetadataURL: "https://api.example.com/.well-known/oauth-protected-resource/mcp",
                              resourceMetadataSource: .challenge, authorizationServer: "https://as.example.com",
                              authorizationServerSource: .resourceMetadata, clientId: "client-1234", clientSource: .store,
                              tokenEndpointAuthMethod: "client_secret_basic", scope: "mcp.read mcp.write", scopeSource: .configuration,
                              registeredAt: 1_800_000_000.75)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(AdminServer.json(facts).utf8)) as? NSDictionary)
        XCTAssertEqual(json, [
            "resource": "https://api.example.com/mcp",
            "resourceMetadataUrl": "https://api.example.com/.well-known/oauth-protected-resource/mcp",
            "resourceMetadataSource": "challenge",
            "authorizationServer": "https://as.example.com",
            "authorizationServerSource": "resource-metadata",
            "clientId": "client-1234",
            "clientIdSource": "store",
            "tokenEndpointAuthMethod": "client_secret_basic",
            "scope": "mcp.read mcp.write",
            "scopeSource": "configuration",
            "registeredAt": 1_800_000_000,
        ] as NSDictionary)
    }

    func testAFactAbsentIsLeftOut() throws {
        let facts = AutoFacts(resource: "https://api.example.com/", resourceMetadataURL: "https://api.example.com/.well-known/oauth-protected-resource",
                              resourceMetadataSource: .wellKnown, authorizationServer: "https://as.example.com",
                              authorizationServerSource: .configuration, clientId: "c", clientSource: .registration,
                              tokenEndpointAuthMethod: "none", scope: nil, scopeSource: nil, registeredAt: 0)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(AdminServer.json(facts).utf8)) as? [String: Any])
        XCTAssertNil(json["scope"])
        XCTAssertNil(json["scopeSource"])
        XCTAssertEqual(json["clientIdSource"] as? String, "registration")
        XCTAssertEqual(json["resourceMetadataSource"] as? String, "well-known")
    }

    func testAPendingStepUp() throws {
        let full = try XCTUnwrap(JSONSerialization.jsonObject(
            with: Data(AdminServer.json(StepUp(scope: ["a", "b"], acrValues: ["mfa"], maxAge: 60)).utf8)) as? NSDictionary)
        XCTAssertEqual(full, ["scope": ["a", "b"], "acrValues": ["mfa"], "maxAge": 60] as NSDictionary)
        let scopeOnly = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(AdminServer.json(StepUp(scope: ["a"])).utf8)) as? NSDictionary)
        XCTAssertEqual(scopeOnly, ["scope": ["a"]] as NSDictionary)
    }

    func testAnIdentityWithAPendingStepUpNamesEachMemberOnce() throws {
        var identity = Identity(name: "person", tokenUrl: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                grant: .authorizationCode(seed: nil))
        identity.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
        var lifecycle = TokenLifecycle(identity: identity)
        _ = lifecycle.stepUp(StepUp(scope: ["orders.write"]), at: 1)
        let status = lifecycle.status(at: 1)
        XCTAssertNotNil(status.pendingStepUp)
        let text = AdminServer.describe(identity, status: status, callers: (entries: 1, capacity: 8))
        // JSONSerialization keeps one of two equal keys silently: count them in the text.
        let keys = ["name", "grant", "state", "hasValidToken", "hasRefreshToken", "consecutiveFailures", "callers", "pendingStepUp"]
        for key in keys {
            XCTAssertEqual(text.components(separatedBy: "\"\(key)\":").count - 1, 1, "\(key) in \(text)")
        }
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        XCTAssertEqual(json["pendingStepUp"] as? NSDictionary, ["scope": ["orders.write"]] as NSDictionary)
    }
}
