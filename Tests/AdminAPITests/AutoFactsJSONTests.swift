@testable import AdminAPI
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
}
