import Crypto
import Endpoints
import JOSE
import JSON
import OAuth2
import SafeText
import XCTest

/// A GitHub App's installation token request, as GitHub's REST API documents it: method, URL,
/// every header in order, the JSON body to the byte, and the App JWT signed into it just before
/// sending.
final class GitHubAppTokenRequestTests: XCTestCase {
    private static let appKey = try! GitHubAppInstallation.appKey(pem: try! PrivateKey.generate(.rsa(bits: 2048)).pemRepresentation())
    private let now: Int64 = 1_800_000_000
    private var random = SecureRandomNumberGenerator()

    /// Identity `gh` for installation 678 of App 12345 at `api` (GitHub.com's by default).
    private func identity(api: HTTPURL = GitHubAppInstallation.defaultAPIURL,
                          configure: (inout GitHubAppInstallation) -> Void = { _ in }) -> Identity {
        var installation = GitHubAppInstallation(appID: "12345", key: Self.appKey, installationID: 678)
        configure(&installation)
        return Identity(name: "gh", tokenUrl: installation.accessTokensURL(api: api), grant: .gitHubAppInstallation(installation))
    }

    private func request(_ identity: Identity) throws -> TokenRequest {
        try XCTUnwrap(TokenRequest.grant(for: identity))
    }

    private func heads(_ request: TokenRequest) -> [String] {
        request.headers.map { "\($0.name): \($0.value)" }
    }

    func testWithoutLimitsItIsAnEmptyPostWithGitHubsHeaders() throws {
        let request = try request(identity())
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url.description, "https://api.github.com/app/installations/678/access_tokens")
        XCTAssertEqual(heads(request), ["Accept: application/vnd.github+json", "X-GitHub-Api-Version: 2022-11-28",
                                        "User-Agent: oauth-relay/\(RelayVersion.number)"])
        XCTAssertEqual(request.body, [])
        XCTAssertEqual(request.fieldNames, [])
        XCTAssertEqual(request.purpose, .grant(.gitHubAppInstallation))
        XCTAssertEqual(request.responseFormat.shape, .gitHubInstallationToken)
    }

    func testTheLimitsGoInAJSONBodyInGitHubsNames() throws {
        let request = try request(identity {
            $0.repositories = ["hello-world", "docs"]
            $0.repositoryIDs = [1296269, 42]
            $0.permissions = ["issues": .write, "contents": .read, "organization_projects": .admin]
        })
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self),
                       #"{"repositories":["hello-world","docs"],"repository_ids":[1296269,42],"#
                       + #""permissions":{"contents":"read","issues":"write","organization_projects":"admin"}}"#)
        XCTAssertEqual(heads(request).first, "Content-Type: application/json")
        XCTAssertEqual(request.fieldNames, ["repositories", "repository_ids", "permissions"])
    }

    func testEachLimitAloneIsTheOnlyMember() throws {
        let cases: [(String, (inout GitHubAppInstallation) -> Void)] = [
            (#"{"repositories":["a.b_c-d"]}"#, { $0.repositories = ["a.b_c-d"] }),
            (#"{"repository_ids":[9007199254740993]}"#, { $0.repositoryIDs = [9_007_199_254_740_993] }),
            (#"{"permissions":{"metadata":"read"}}"#, { $0.permissions = ["metadata": .read] }),
        ]
        for (body, configure) in cases {
            XCTAssertEqual(String(decoding: try request(identity(configure: configure)).body, as: UTF8.self), body)
        }
    }

    func testGitHubEnterpriseServerKeepsItsAPIPathPrefix() throws {
        for base in ["https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/", "https://ghe.example.com:8443/api/v3"] {
            let api = try HTTPURL(absolute: base, allowsQuery: false)
            let url = try request(identity(api: api)).url
            XCTAssertEqual(url.requestTarget, "/api/v3/app/installations/678/access_tokens", base)
            XCTAssertEqual(url.host, "ghe.example.com")
        }
        XCTAssertEqual(try request(identity(api: try HTTPURL(absolute: "http://127.0.0.1:9000", allowsQuery: false))).url.description,
                       "http://127.0.0.1:9000/app/installations/678/access_tokens")
    }

    func testTheAppJWTIsSignedIntoAuthorizationJustBeforeSending() throws {
        let unsigned = try request(identity())
        XCTAssertTrue(unsigned.needsClientAssertion)
        XCTAssertNil(unsigned.headers.first { $0.name == "Authorization" })
        let signed = try unsigned.withClientAssertion(unixTime: now, random: &random)
        XCTAssertFalse(signed.needsClientAssertion)
        let authorization = try XCTUnwrap(signed.headers.last)
        XCTAssertEqual(authorization.name, "Authorization")
        XCTAssertTrue(authorization.value.hasPrefix("Bearer "))
        let jwt = String(authorization.value.dropFirst("Bearer ".count))
        let claims = try JWT.verifiedClaims(jwt, key: JWSVerificationKey(publicKey: Self.appKey.signer.publicJWK()!.publicKey(), allowing: [.rs256]),
                                            rules: JWTValidationRules(issuer: "12345"), now: now)
        XCTAssertEqual(claims.issuedAt, now - 60)
        XCTAssertEqual(claims.expiry, now + 540)
        XCTAssertEqual(signed.body, unsigned.body)
        XCTAssertEqual(signed.headers.dropLast().map(\.description), unsigned.headers.map(\.description))
        // Signed again (a retry): a new JWT replaces the old one, never beside it.
        let again = try signed.withClientAssertion(unixTime: now + 5, random: &random)
        XCTAssertEqual(again.headers.filter { $0.name == "Authorization" }.count, 1)
    }

    func testTheJWTIsNeverInADescriptionAndNeverQuotedFromAnAnswer() throws {
        let signed = try request(identity()).withClientAssertion(unixTime: now, random: &random)
        let jwt = String(try XCTUnwrap(signed.headers.last).value.dropFirst("Bearer ".count))
        for text in [signed.description, signed.debugDescription, "\(signed.customMirror.children.map(\.value))"] {
            XCTAssertFalse(text.contains(jwt.prefix(20)), text)
        }
        XCTAssertEqual(signed.description, "POST https://api.github.com/app/installations/678/access_tokens (github_app_installation grant) fields: ")
        let echo = reply(401, #"{"message":"Bad credentials for \#(jwt)","documentation_url":"https://docs.github.com/rest"}"#)
        XCTAssertThrowsError(try signed.parseResponse(echo, unixTime: Double(now))) { error in
            XCTAssertEqual(error as? TokenEndpointError,
                           .gitHubAPI(GitHubAPIError(status: 401, message: "Bad credentials for …", documentationURL: "https://docs.github.com/rest"),
                                      retryAfter: nil))
        }
    }

    func testTheIdentitysOwnHeadersComeLastAndReplaceGitHubs() throws {
        var identity = identity()
        identity.headers = ["X-GitHub-Api-Version": "2026-03-10", "X-Team": "platform"]
        XCTAssertEqual(heads(try request(identity)), ["Accept: application/vnd.github+json", "User-Agent: oauth-relay/\(RelayVersion.number)",
                                                      "X-GitHub-Api-Version: 2026-03-10", "X-Team: platform"])
    }

    /// A rotated key file (`Identity.withCredential`): the next request's App JWT is signed with
    /// the new key; a file that cannot stand in keeps the key loaded.
    func testARotatedAppKeySignsTheNextRequest() throws {
        let identity = identity()
        XCTAssertTrue(identity.holdsCredential(.clientKey))
        let newKey = try PrivateKey.generate(.rsa(bits: 2048))
        let rotated = try identity.withCredential(.clientKey, content: newKey.pemRepresentation())
        let jwt = String(try XCTUnwrap(try request(rotated).withClientAssertion(unixTime: now, random: &random).headers.last)
            .value.dropFirst("Bearer ".count))
        XCTAssertNoThrow(try JWT.verifiedClaims(jwt, key: JWSVerificationKey(publicKey: newKey.publicKey, allowing: [.rs256]),
                                                rules: JWTValidationRules(issuer: "12345"), now: now))
        guard case .gitHubAppInstallation(let installation) = rotated.grant else { return XCTFail("\(rotated.grant)") }
        XCTAssertEqual(installation.installationID, 678)
        XCTAssertEqual(rotated.tokenUrl, identity.tokenUrl)
        XCTAssertThrowsError(try identity.withCredential(.clientKey, content: PrivateKey.generate(.ecP256).pemRepresentation())) { error in
            XCTAssertEqual(error as? CredentialFileProblem,
                           .unusableKey("GitHub verifies App JWTs with RS256 only, which needs an RSA key; this is an EC P-256 key"))
        }
        XCTAssertThrowsError(try identity.withCredential(.clientKey, content: " \n")) { error in
            XCTAssertEqual(error as? CredentialFileProblem, .empty)
        }
        XCTAssertThrowsError(try identity.withCredential(.clientSecret, content: "s3cret")) { error in
            XCTAssertEqual(error as? CredentialFileProblem, .notUsed(.clientSecret))
        }
    }

    func testTheAppKeyIsReadFromPEMTextAndMustBeRSA() throws {
        let ec = try PrivateKey.generate(.ecP256).pemRepresentation()
        XCTAssertThrowsError(try GitHubAppInstallation.appKey(pem: ec)) { error in
            XCTAssertEqual(error as? GitHubAppKeyError, .notRSA(.ecP256))
            XCTAssertEqual("\(error)", "GitHub verifies App JWTs with RS256 only, which needs an RSA key; this is an EC P-256 key")
        }
        let junk = "-----BEGIN RSA PRIVATE KEY-----\nTm90QUtleUF0QWxs\n-----END RSA PRIVATE KEY-----\n"
        XCTAssertThrowsError(try GitHubAppInstallation.appKey(pem: junk)) { error in
            guard case .unreadable(let reason)? = error as? GitHubAppKeyError else { return XCTFail("\(error)") }
            XCTAssertFalse(reason.contains("Tm90QUtl"))
            XCTAssertTrue("\(error)".hasPrefix("not a usable PEM private key ("), "\(error)")
        }
        let rsa = try PrivateKey.generate(.rsa(bits: 2048))
        XCTAssertEqual(try GitHubAppInstallation.appKey(pem: rsa.pemRepresentation()).algorithm, .rs256)
        XCTAssertEqual(try GitHubAppInstallation.appKey(pem: rsa.pemRepresentation()),
                       try ClientAssertionKey(privateKey: rsa, algorithm: .rs256))
    }
}
