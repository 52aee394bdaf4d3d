import Endpoints
import OAuth2
import SafeText
import XCTest

/// Which IdP endpoints an identity needs, checked against what its configuration and its
/// provider's metadata supply; and that an ID token is never taken unchecked.
final class RequiredEndpointTests: XCTestCase {
    private let issuer = "https://idp.example.com"
    private func url(_ path: String) -> HTTPURL { HTTPURL(scheme: .https, host: "idp.example.com", path: path) }

    /// An identity with only `issuer` and `grant` (and `scope`): everything else is discovered.
    private func discovering(_ grant: Grant, scope: String? = nil) -> Identity {
        makeIdentity(grant, clientId: "cli-app", secret: nil) {
            $0.tokenUrl = nil
            $0.issuer = self.issuer
            $0.scope = scope
        }
    }

    private func metadata(authorization: Bool = true, device: Bool = true, jwks: Bool = true) -> ProviderMetadata {
        ProviderMetadata(issuer: issuer, tokenEndpoint: url("/token"), authorizationEndpoint: authorization ? url("/authorize") : nil,
                         deviceAuthorizationEndpoint: device ? url("/device") : nil, jwksUri: jwks ? url("/jwks") : nil)
    }

    private func missing(_ identity: Identity, _ metadata: ProviderMetadata) -> [RequiredEndpoint]? {
        do {
            _ = try IdentityEndpoints(identity: identity, metadata: metadata, documentURL: "\(issuer)/.well-known/openid-configuration")
            return nil
        } catch {
            guard case .missingEndpoints(_, let missing) = error else { XCTFail("\(error)"); return nil }
            return missing
        }
    }

    func testEachGrantAndScopeNeedsItsEndpoints() {
        XCTAssertEqual(discovering(.clientCredentials).requiredEndpoints, [.token])
        XCTAssertEqual(discovering(.clientCredentials, scope: "openid").requiredEndpoints, [.token], "no ID token is read")
        XCTAssertEqual(discovering(.authorizationCode(seed: nil), scope: "orders").requiredEndpoints, [.token, .authorization])
        XCTAssertEqual(discovering(.authorizationCode(seed: nil), scope: "openid orders").requiredEndpoints, [.token, .authorization, .jwks])
        XCTAssertEqual(discovering(.deviceCode(seed: nil), scope: "openid").requiredEndpoints, [.token, .deviceAuthorization])
    }

    func testTheConfigurationsMissingEndpointsAreNamedByTheirKeys() {
        let identity = discovering(.authorizationCode(seed: nil), scope: "openid")
        XCTAssertEqual(identity.missingEndpoints, ["tokenUrl", "authorizationUrl", "jwksUrl"])
        XCTAssertTrue(identity.needsDiscovery)
        var configured = identity
        configured.tokenUrl = url("/t")
        configured.authorizationUrl = url("/a")
        configured.jwksUrl = url("/k")
        XCTAssertEqual(configured.missingEndpoints, [])
        XCTAssertNotNil(configured.configuredEndpoints)
    }

    func testMetadataWithoutAnEndpointTheIdentityNeedsFailsNamingTheMember() {
        XCTAssertEqual(missing(discovering(.authorizationCode(seed: nil), scope: "openid"), metadata(authorization: false)), [.authorization])
        XCTAssertEqual(missing(discovering(.authorizationCode(seed: nil), scope: "openid"), metadata(jwks: false)), [.jwks])
        XCTAssertEqual(missing(discovering(.authorizationCode(seed: nil), scope: "openid"), metadata(authorization: false, jwks: false)),
                       [.authorization, .jwks])
        XCTAssertEqual(missing(discovering(.deviceCode(seed: nil)), metadata(device: false)), [.deviceAuthorization])
    }

    func testMetadataLackingOnlyWhatTheIdentityDoesNotNeedOrConfiguresIsFine() {
        XCTAssertNil(missing(discovering(.authorizationCode(seed: nil), scope: "orders"), metadata(device: false, jwks: false)))
        XCTAssertNil(missing(discovering(.deviceCode(seed: nil), scope: "openid"), metadata(authorization: false, jwks: false)))
        XCTAssertNil(missing(discovering(.clientCredentials), metadata(authorization: false, device: false, jwks: false)))
        var configured = discovering(.authorizationCode(seed: nil), scope: "openid")
        configured.jwksUrl = url("/my-keys")
        XCTAssertNil(missing(configured, metadata(jwks: false)), "the configured JWKS stands in")
    }

    func testTheFailureSaysWhichMemberIsMissingAndWhatNeedsIt() {
        let error = DiscoveryError.missingEndpoints(url: "\(issuer)/.well-known/openid-configuration", [.authorization, .jwks])
        XCTAssertEqual(error.description, "the discovery document at https://idp.example.com/.well-known/openid-configuration has no "
                       + "authorization_endpoint, which the authorization_code grant needs (or configure authorizationUrl), and no "
                       + "jwks_uri, which checking the ID token that a scope with \"openid\" asks for needs (or configure jwksUrl)")
        XCTAssertEqual(error.code, "discovery_endpoint_missing")
        XCTAssertFalse(error.isTemporary)
        XCTAssertEqual(TokenEndpointError.discovery(error).metricLabel, "discovery_endpoint_missing")
    }

    // MARK: - The ID token of a login's code exchange

    private func endpoints(jwks: Bool) -> IdentityEndpoints {
        IdentityEndpoints(token: url("/token"), authorization: url("/authorize"), jwks: jwks ? url("/jwks") : nil)
    }

    func testAnIDTokenIsCheckedWhenItCanBe() {
        let plan = IDTokenCheck.plan(for: discovering(.authorizationCode(seed: nil), scope: "openid"), endpoints: endpoints(jwks: true),
                                     nonce: Secret("n"), idToken: Secret("header.claims.signature"))
        guard case .check(let check, let token, let jwks) = plan else { return XCTFail("\(plan)") }
        XCTAssertEqual(check, IDTokenCheck(issuer: issuer, clientId: "cli-app", nonce: Secret("n")))
        XCTAssertEqual(token, Secret("header.claims.signature"))
        XCTAssertEqual(jwks, url("/jwks"))
    }

    func testAnIDTokenAskedForIsNeverTakenUnchecked() {
        let identity = discovering(.authorizationCode(seed: nil), scope: "openid")
        let withoutJWKS = IDTokenCheck.plan(for: identity, endpoints: endpoints(jwks: false), nonce: nil, idToken: Secret("t"))
        XCTAssertEqual(withoutJWKS, .refuse(reason: "the ID token cannot be checked: the identity has no JWKS (jwks_uri or jwksUrl) "
                                            + "to check its signature with"))
        var noIssuer = identity
        noIssuer.issuer = nil
        guard case .refuse(let reason) = IDTokenCheck.plan(for: noIssuer, endpoints: nil, nonce: nil, idToken: Secret("t")) else {
            return XCTFail("an ID token without an issuer or JWKS to check it was taken")
        }
        XCTAssertTrue(reason.contains("no issuer") && reason.contains("no JWKS"), reason)
        XCTAssertEqual(IDTokenCheck.plan(for: identity, endpoints: endpoints(jwks: true), nonce: nil, idToken: nil),
                       .refuse(reason: "the token response has no id_token although the scope asks for openid"))
    }

    func testAnIDTokenNotAskedForIsCheckedIfItCanBeAndOtherwiseLeftUnread() {
        let identity = discovering(.authorizationCode(seed: nil), scope: "orders")
        guard case .check = IDTokenCheck.plan(for: identity, endpoints: endpoints(jwks: true), nonce: nil, idToken: Secret("t")) else {
            return XCTFail("an ID token that can be checked must be")
        }
        XCTAssertEqual(IDTokenCheck.plan(for: identity, endpoints: endpoints(jwks: false), nonce: nil, idToken: Secret("t")), .leaveUnread)
        XCTAssertEqual(IDTokenCheck.plan(for: identity, endpoints: endpoints(jwks: false), nonce: nil, idToken: nil), .noneAskedFor)
    }
}
