import Config
import Crypto
import Endpoints
import OAuth2
import XCTest

/// A Google service account in the config (`serviceAccountKeyFile`): the grant each combination of
/// `scope`, `audience`, `selfSignedJwt` and `serviceAccountSubject` decodes to, and every refusal
/// with its exact text and JSON path.
final class ServiceAccountConfigTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let email = "relay@orders-project.iam.gserviceaccount.com"
    private let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"

    /// A key file as Google writes it, with `extra` members (JSON text) replacing or adding to them.
    private static func keyFile(tokenURI: String = "https://oauth2.googleapis.com/token", clientEmail: String = email) -> String {
        let pem = try! rsa.pemRepresentation().replacingOccurrences(of: "\n", with: "\\n")
        return """
        { "type": "service_account", "project_id": "orders-project", "private_key_id": "k-2024",
          "private_key": "\(pem)", "client_email": "\(clientEmail)", "client_id": "1132589",
          "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "\(tokenURI)" }
        """
    }

    private func json(_ body: String) -> String {
        #"{ "identities": { "gsa": { "serviceAccountKeyFile": "sa.json", \#(body) } } }"#
    }

    private func decoded(_ body: String, keyFile: String = keyFile(), file: StaticString = #filePath, line: UInt = #line) throws -> Identity {
        switch try decodeConfig(json(body), besideFiles: ["sa.json": keyFile]) {
        case .success(let config): return try XCTUnwrap(config.identities["gsa"], file: file, line: line)
        case .failure(let errors):
            XCTFail("\(describe(errors.errors))", file: file, line: line)
            throw errors
        }
    }

    private func errors(_ body: String, keyFile: String = keyFile()) throws -> [String] {
        try configErrors(json(body), besideFiles: ["sa.json": keyFile])
            .map { $0.replacing(#/: /\S+/sa\.json$/#, with: ": sa.json") }
    }

    private func key() throws -> ServiceAccountKey { try ServiceAccountKey.parse(json: Self.keyFile()) }

    // MARK: What each combination decodes to

    func testTheContractsShapeAsksTheTokenEndpointOfTheKeyFile() throws {
        let identity = try decoded(#""grant": "client_credentials", "scope": "\#(cloudPlatform)""#)
        XCTAssertEqual(identity.grant, .serviceAccount(ServiceAccountGrant(key: try key(), token: .tokenEndpoint(scope: cloudPlatform, subject: nil))))
        XCTAssertEqual(identity.tokenUrl?.description, "https://oauth2.googleapis.com/token")
        XCTAssertEqual(identity.clientAuth, .unidentified)
        XCTAssertEqual(identity.scope, cloudPlatform)
        XCTAssertNil(identity.audience)
    }

    func testTheGrantMayBeOmittedOrNamedJWTBearer() throws {
        let omitted = try decoded(#""scope": ["\#(cloudPlatform)", "openid"]"#)
        let named = try decoded(#""grant": "urn:ietf:params:oauth:grant-type:jwt-bearer", "scope": "\#(cloudPlatform) openid""#)
        XCTAssertEqual(omitted.grant, named.grant)
        XCTAssertEqual(omitted.grant.serviceAccount?.token, .tokenEndpoint(scope: "\(cloudPlatform) openid", subject: nil))
    }

    func testTokenUrlOverridesTheKeysTokenURI() throws {
        let identity = try decoded(#""scope": "s", "tokenUrl": "https://oauth2-psc.example.com/token""#)
        XCTAssertEqual(identity.tokenUrl?.description, "https://oauth2-psc.example.com/token")
        XCTAssertEqual(identity.grant.serviceAccount?.key.tokenURI.description, "https://oauth2.googleapis.com/token")
    }

    func testServiceAccountSubjectIsTheDelegatedUser() throws {
        let identity = try decoded(#""scope": "s", "serviceAccountSubject": "admin@example.com""#)
        XCTAssertEqual(identity.grant.serviceAccount?.token, .tokenEndpoint(scope: "s", subject: "admin@example.com"))
    }

    func testAudienceMakesASelfSignedJWTForThatAPI() throws {
        let identity = try decoded(#""audience": "https://pubsub.googleapis.com/""#)
        XCTAssertEqual(identity.grant.serviceAccount?.token, .selfSignedAudience("https://pubsub.googleapis.com/"))
        XCTAssertTrue(identity.grant.isSelfSigned)
        XCTAssertEqual(try decoded(#""audience": "https://pubsub.googleapis.com/", "selfSignedJwt": true"#).grant, identity.grant)
    }

    func testSelfSignedJwtPutsTheScopeInTheJWT() throws {
        let identity = try decoded(#""scope": "\#(cloudPlatform)", "selfSignedJwt": true, "refreshSkewSeconds": 30"#)
        XCTAssertEqual(identity.grant.serviceAccount?.token, .selfSignedScope(cloudPlatform))
        XCTAssertEqual(try decoded(#""scope": "s", "selfSignedJwt": false"#).grant.serviceAccount?.token,
                       .tokenEndpoint(scope: "s", subject: nil))
    }

    func testALoopbackTokenURIServesLocalTests() throws {
        let identity = try decoded(#""scope": "s""#, keyFile: Self.keyFile(tokenURI: "http://127.0.0.1:8089/token"))
        XCTAssertEqual(identity.tokenUrl?.description, "http://127.0.0.1:8089/token")
    }

    // MARK: Refusals

    func testGrantsOtherThanClientCredentialsAndJWTBearerAreRefused() throws {
        XCTAssertEqual(try errors(#""grant": "password", "scope": "s""#), [
            "$.identities.gsa.grant: a service account (serviceAccountKeyFile) gets its tokens with Google's jwt-bearer grant: "
                + "use client_credentials (the default) or urn:ietf:params:oauth:grant-type:jwt-bearer, not password",
        ])
        XCTAssertEqual(try errors(#""grant": "urn:ietf:params:oauth:grant-type:token-exchange", "scope": "s""#).count, 1)
    }

    func testTheKeysOfOtherClientsAndGrantsAreRefused() throws {
        let client = "the key file names the account (client_email) and its private_key signs the requests"
        let grant = "the relay signs the service account's jwt-bearer assertion itself"
        XCTAssertEqual(try errors(#"""
            "scope": "s", "clientId": "c", "clientSecret": "x", "clientAuth": "private_key_jwt", "clientKeyId": "k",
            "assertion": "a.b.c", "issuer": "https://accounts.google.com", "resource": "https://r/", "dpop": true
            """#), [
            "$.identities.gsa.clientId: clientId is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.clientSecret: clientSecret is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.clientAuth: clientAuth is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.clientKeyId: clientKeyId is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.assertion: assertion is not used with serviceAccountKeyFile: \(grant)",
            "$.identities.gsa.issuer: issuer is not used with serviceAccountKeyFile: the key file's token_uri is the token endpoint (tokenUrl overrides it)",
            "$.identities.gsa.resource: resource is not used with serviceAccountKeyFile: Google's token endpoint takes no resource indicators",
            "$.identities.gsa.dpop: dpop is not used with serviceAccountKeyFile: Google issues service accounts Bearer tokens",
        ])
        XCTAssertEqual(try errors(#""scope": "s", "clientCertFile": "cert.pem", "sendClientIdWithAssertion": true"#), [
            "$.identities.gsa.clientCertFile: clientCertFile is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.sendClientIdWithAssertion: sendClientIdWithAssertion is not used with serviceAccountKeyFile: \(client)",
        ])
        let gitHub = "it is a GitHub App's key (grant github_app_installation), not a Google service account's"
        XCTAssertEqual(try errors(#"""
            "scope": "s", "clientAssertionFile": "/run/token", "appId": 1, "installationId": 2, "githubApiUrl": "https://api.github.com",
            "repositories": ["r"], "repositoryIds": [3], "permissions": { "contents": "read" }
            """#), [
            "$.identities.gsa.clientAssertionFile: clientAssertionFile is not used with serviceAccountKeyFile: \(client)",
            "$.identities.gsa.appId: appId is not used with serviceAccountKeyFile: \(gitHub)",
            "$.identities.gsa.installationId: installationId is not used with serviceAccountKeyFile: \(gitHub)",
            "$.identities.gsa.githubApiUrl: githubApiUrl is not used with serviceAccountKeyFile: \(gitHub)",
            "$.identities.gsa.repositories: repositories is not used with serviceAccountKeyFile: \(gitHub)",
            "$.identities.gsa.repositoryIds: repositoryIds is not used with serviceAccountKeyFile: \(gitHub)",
            "$.identities.gsa.permissions: permissions is not used with serviceAccountKeyFile: \(gitHub)",
        ])
        XCTAssertEqual(try errors(#""scope": "s", "params": { "assertion": "a.b.c" }"#),
                       ["$.identities.gsa.params.assertion: assertion is the service account's signed JWT; it is not set in params"])
        XCTAssertEqual(try errors(#""scope": "s", "authorizationUrl": "https://accounts.google.com/o/oauth2/auth""#), [
            "$.identities.gsa.authorizationUrl: authorizationUrl is only used by the authorization_code grant, "
                + "not by the urn:ietf:params:oauth:grant-type:jwt-bearer grant",
        ])
    }

    func testScopeOrAudienceIsNeededAndNeverBoth() throws {
        XCTAssertEqual(try errors(#""grant": "client_credentials""#),
                       ["$.identities.gsa.scope: required with serviceAccountKeyFile (or audience, for a self-signed JWT)"])
        XCTAssertEqual(try errors(#""scope": "s", "audience": "https://pubsub.googleapis.com/""#), [
            "$.identities.gsa.audience: set scope (a token from the token endpoint, or a self-signed JWT's scope claim) or audience "
                + "(a self-signed JWT for that API), not both: Google's JWTs name one or the other",
        ])
        XCTAssertEqual(try errors(#""audience": "https://pubsub.googleapis.com/", "selfSignedJwt": false"#), [
            "$.identities.gsa.selfSignedJwt: audience makes a self-signed JWT for that API (Google's token endpoint takes no audience); "
                + "use scope for a token from the token endpoint",
        ])
    }

    func testASelfSignedJWTTakesNoKeyOfARequestAndActsForNoOneElse() throws {
        let why = "is not used by a self-signed JWT: the relay makes the token itself, with no token request"
        XCTAssertEqual(try errors(#"""
            "audience": "https://pubsub.googleapis.com/", "tokenUrl": "https://oauth2.googleapis.com/token", "params": { "a": "b" },
            "headers": { "X-A": "b" }, "tls": { "serverName": "oauth2.googleapis.com" }, "allowInsecureTokenUrl": true,
            "defaultExpiresInSeconds": 60, "responseFields": { "token": "t" }, "serviceAccountSubject": "admin@example.com"
            """#), [
            "$.identities.gsa.tokenUrl: tokenUrl \(why)",
            "$.identities.gsa.params: params \(why)",
            "$.identities.gsa.headers: headers \(why)",
            "$.identities.gsa.tls: tls \(why)",
            "$.identities.gsa.allowInsecureTokenUrl: allowInsecureTokenUrl \(why)",
            "$.identities.gsa.defaultExpiresInSeconds: defaultExpiresInSeconds \(why)",
            "$.identities.gsa.responseFields: responseFields \(why)",
            "$.identities.gsa.serviceAccountSubject: domain-wide delegation needs the token endpoint (scope without audience or "
                + "selfSignedJwt): a self-signed JWT acts as the service account itself",
        ])
        XCTAssertEqual(try errors(#""scope": "s", "selfSignedJwt": true, "tokenUrl": "https://oauth2.googleapis.com/token""#),
                       ["$.identities.gsa.tokenUrl: tokenUrl \(why)"])
    }

    func testASelfSignedJWTNeedsTheKeyFilesPrivateKeyID() throws {
        let withoutKeyID = Self.keyFile().replacingOccurrences(of: #""private_key_id": "k-2024","#, with: "")
        let refused = ["$.identities.gsa.serviceAccountKeyFile: a self-signed JWT names its key by kid, the key file's "
                       + "private_key_id, which this file has not: sa.json"]
        XCTAssertEqual(try errors(#""audience": "https://pubsub.googleapis.com/""#, keyFile: withoutKeyID), refused)
        XCTAssertEqual(try errors(#""scope": "s", "selfSignedJwt": true"#, keyFile: withoutKeyID), refused)
        // The token endpoint knows the key by the account and the signature: no kid needed there.
        XCTAssertNil(try decoded(#""scope": "s""#, keyFile: withoutKeyID).grant.serviceAccount?.key.keyID)
    }

    func testTheServiceAccountKeysNeedAKeyFile() throws {
        XCTAssertEqual(identityErrors(#""clientId": "c", "serviceAccountSubject": "admin@example.com", "selfSignedJwt": true"#), [
            "$.identities.x.serviceAccountSubject: serviceAccountSubject is only used with serviceAccountKeyFile",
            "$.identities.x.selfSignedJwt: selfSignedJwt is only used with serviceAccountKeyFile",
        ])
    }

    func testAKeyFileThatCannotBeUsedIsReportedByFileAndMemberNeverByValue() throws {
        XCTAssertEqual(try errors(#""scope": "s""#, keyFile: Self.keyFile(clientEmail: "")),
                       ["$.identities.gsa.serviceAccountKeyFile: the service account key's client_email is empty: sa.json"])
        XCTAssertEqual(try errors(#""scope": "s""#, keyFile: #"{"type": "authorized_user", "refresh_token": "1//0g-secret"}"#), [
            #"$.identities.gsa.serviceAccountKeyFile: not a service account key: its type is "authorized_user", not "service_account": sa.json"#,
        ])
        let insecure = try errors(#""scope": "s""#, keyFile: Self.keyFile(tokenURI: "http://oauth2.example.com/token"))
        XCTAssertEqual(insecure.count, 1)
        XCTAssertTrue(insecure.first?.hasPrefix("$.identities.gsa.serviceAccountKeyFile: the service account key's token_uri "
                                                + "http://oauth2.example.com/token is plain http://") == true, "\(insecure)")
        let truncated = try errors(#""scope": "s""#, keyFile: String(Self.keyFile().prefix(400)))
        XCTAssertEqual(truncated.count, 1)
        XCTAssertTrue(truncated.first?.hasPrefix("$.identities.gsa.serviceAccountKeyFile: not a JSON service account key "
                                                 + "(a JSON syntax error at byte ") == true, "\(truncated)")
        let body = try Self.rsa.pemRepresentation().split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for error in insecure + truncated {
            for line in body { XCTAssertFalse(error.contains(line), error) }
        }
        XCTAssertEqual(try configErrors(json(#""scope": "s""#), besideFiles: [:]).map { $0.replacing(#/: /\S+/sa\.json$/#, with: ": sa.json") },
                       ["$.identities.gsa.serviceAccountKeyFile: no such file: sa.json"])
    }
}
