import Config
import Crypto
import Endpoints
import OAuth2
import XCTest

/// `"grant": "github_app_installation"` in the config: what it decodes to, and every value and
/// key `check` refuses, with the exact message at its JSON path.
final class GitHubAppConfigTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let required = #""grant": "github_app_installation", "appId": "12345", "installationId": "678", "clientKeyFile": "app.pem""#

    /// Identity `gh`: the required keys, then `more` (a JSON fragment that may replace them).
    private func json(_ more: String = "", required: String = GitHubAppConfigTests.required) -> String {
        let members = [required, more].filter { !$0.isEmpty }.joined(separator: ", ")
        return #"{ "identities": { "gh": { \#(members) } } }"#
    }

    private func files(key: PrivateKey = rsa, pem: String? = nil) throws -> [String: String] {
        ["app.pem": try pem ?? key.pemRepresentation(), "ec.pem": try Self.ec.pemRepresentation()]
    }

    private func decoded(_ more: String = "", required: String = GitHubAppConfigTests.required,
                         file: StaticString = #filePath, line: UInt = #line) throws -> (Identity, GitHubAppInstallation) {
        switch try decodeConfig(json(more, required: required), besideFiles: files()) {
        case .success(let config):
            let identity = try XCTUnwrap(config.identities["gh"], file: file, line: line)
            guard case .gitHubAppInstallation(let installation) = identity.grant else {
                XCTFail("grant \(identity.grant)", file: file, line: line)
                throw XCTSkip("not a GitHub App")
            }
            return (identity, installation)
        case .failure(let errors):
            XCTFail("\(describe(errors.errors))", file: file, line: line)
            throw errors
        }
    }

    /// The errors, with the temporary directory taken out of file paths.
    private func errors(_ more: String = "", required: String = GitHubAppConfigTests.required, pem: String? = nil) throws -> [String] {
        try configErrors(json(more, required: required), besideFiles: files(pem: pem)).map { $0.replacing(#/ /\S+/(\w+\.pem)/#) { " " + $0.output.1 } }
    }

    func testTheRequiredKeysMakeAnInstallationAtGitHubCom() throws {
        let (identity, installation) = try decoded()
        XCTAssertEqual(installation.appID, "12345")
        XCTAssertEqual(installation.installationID, 678)
        XCTAssertEqual(installation.key, try ClientAssertionKey(privateKey: Self.rsa, algorithm: .rs256))
        XCTAssertEqual(installation.repositories, [])
        XCTAssertEqual(installation.repositoryIDs, [])
        XCTAssertEqual(installation.permissions, [:])
        XCTAssertEqual(identity.tokenUrl?.description, "https://api.github.com/app/installations/678/access_tokens")
        XCTAssertEqual(identity.clientAuth, .unidentified)
        XCTAssertNil(identity.dpop)
        // The key file is read again when it rotates.
        XCTAssertEqual(identity.credentialFiles.map(\.key), ["clientKeyFile"])
        XCTAssertEqual(identity.credentialFiles.map(\.role), [.clientKey])
        XCTAssertEqual(try TokenEndpointSecurity.check(identity), .https)
    }

    func testIDsMayBeNumbersAndTheAppItsClientID() throws {
        let (_, numbers) = try decoded(required: #""grant": "github_app_installation", "appId": 12345, "installationId": 678, "clientKeyFile": "app.pem""#)
        XCTAssertEqual(numbers.appID, "12345")
        XCTAssertEqual(numbers.installationID, 678)
        for clientID in ["Iv1.0123456789abcdef", "Iv23liAbCdEf01234567"] {
            let (_, installation) = try decoded(required: #""grant": "github_app_installation", "appId": "\#(clientID)", "installationId": "678", "clientKeyFile": "app.pem""#)
            XCTAssertEqual(installation.appID, clientID)
        }
    }

    func testRepositoriesAndPermissionsNarrowTheToken() throws {
        let (_, installation) = try decoded(#""repositories": ["hello-world", "docs.site_v2"], "repositoryIds": [1296269, 42], "#
                                            + #""permissions": {"contents": "read", "issues": "write", "organization_projects": "admin"}"#)
        XCTAssertEqual(installation.repositories, ["hello-world", "docs.site_v2"])
        XCTAssertEqual(installation.repositoryIDs, [1296269, 42])
        XCTAssertEqual(installation.permissions, ["contents": .read, "issues": .write, "organization_projects": .admin])
    }

    func testGitHubEnterpriseServersAPIAndPlainHTTPOnLoopbackOnly() throws {
        let (ghes, _) = try decoded(#""githubApiUrl": "https://ghe.example.com/api/v3/", "tls": {"serverName": "ghe.example.com"}"#)
        XCTAssertEqual(ghes.tokenUrl?.description, "https://ghe.example.com/api/v3/app/installations/678/access_tokens")
        XCTAssertEqual(ghes.tls?.serverName, "ghe.example.com")
        let (local, _) = try decoded(#""githubApiUrl": "http://127.0.0.1:8080/api/v3""#)
        XCTAssertEqual(try TokenEndpointSecurity.check(local), .loopbackHTTP)
        let (remote, _) = try decoded(#""githubApiUrl": "http://ghe.example.com/api/v3""#)
        XCTAssertThrowsError(try TokenEndpointSecurity.check(remote)) { error in
            XCTAssertEqual((error as? InsecureTokenURL)?.path, "$.identities.gh.githubApiUrl")
        }
        let (allowed, _) = try decoded(#""githubApiUrl": "http://ghe.example.com/api/v3", "allowInsecureTokenUrl": true"#)
        XCTAssertEqual(try TokenEndpointSecurity.check(allowed), .insecureHTTPAllowed)
    }

    func testEachRequiredKeyIsReportedMissing() throws {
        XCTAssertEqual(try errors(required: #""grant": "github_app_installation""#), [
            "$.identities.gh.appId: required for the github_app_installation grant",
            "$.identities.gh.installationId: required for the github_app_installation grant",
            "$.identities.gh.clientKeyFile: required for the github_app_installation grant",
        ])
    }

    func testBadValuesAreRefusedWithTheirPath() throws {
        let appID = "expected the App's ID (such as 12345) or its client ID (such as Iv23liAbCdEf01234567), got "
        let installation = "expected the installation's ID, a positive integer such as 678, got "
        let repository = #"expected a repository name (letters, digits, ".", "-" and "_", at most 100), got "#
        let table: [(String, String)] = [
            (#""appId": "my-app""#, #"$.identities.gh.appId: \#(appID)"my-app""#),
            (#""appId": "012345""#, #"$.identities.gh.appId: \#(appID)"012345""#),
            (#""appId": "12 345""#, #"$.identities.gh.appId: \#(appID)"12 345""#),
            (#""appId": "Iv""#, #"$.identities.gh.appId: \#(appID)"Iv""#),
            (#""appId": "Iv1.ab/cd""#, #"$.identities.gh.appId: \#(appID)"Iv1.ab/cd""#),
            (#""appId": """#, #"$.identities.gh.appId: \#(appID)"""#),
            (#""appId": 0"#, "$.identities.gh.appId: must be the App's ID, a positive integer, got 0"),
            (#""appId": 1.5"#, "$.identities.gh.appId: expected an integer, got 1.5"),
            (#""appId": true"#, "$.identities.gh.appId: expected a string, got boolean"),
            (#""installationId": "0x1""#, #"$.identities.gh.installationId: \#(installation)"0x1""#),
            (#""installationId": "99999999999999999999""#, #"$.identities.gh.installationId: \#(installation)"99999999999999999999""#),
            (#""installationId": -5"#, "$.identities.gh.installationId: must be the installation's ID, a positive integer, got -5"),
            (#""installationId": null"#, "$.identities.gh.installationId: expected a string, got null"),
            (#""clientKeyFile": "ec.pem""#,
             "$.identities.gh.clientKeyFile: GitHub verifies App JWTs with RS256 only, which needs an RSA key; this is an EC P-256 key: ec.pem"),
            (#""clientKeyFile": "missing.pem""#, "$.identities.gh.clientKeyFile: no such file: missing.pem"),
            (#""githubApiUrl": "ftp://ghe.example.com""#,
             #"$.identities.gh.githubApiUrl: unsupported scheme "ftp" in "ftp://ghe.example.com" (expected http or https)"#),
            (#""githubApiUrl": "https://ghe.example.com/api/v3?x=1""#,
             #"$.identities.gh.githubApiUrl: a query (?…) is not allowed in "https://ghe.example.com/api/v3?x=1""#),
            (#""repositories": []"#,
             "$.identities.gh.repositories: an empty list limits nothing; remove the key for a token on every repository of the installation"),
            (#""repositories": "docs""#, "$.identities.gh.repositories: expected an array, got string"),
            (#""repositories": ["octo/hello"]"#,
             #"$.identities.gh.repositories[0]: expected a repository's name without its owner (the installation's account owns it), got "octo/hello""#),
            (#""repositories": ["a b"]"#, #"$.identities.gh.repositories[0]: \#(repository)"a b""#),
            (#""repositories": [".."]"#, #"$.identities.gh.repositories[0]: \#(repository)"..""#),
            (#""repositories": [""]"#, #"$.identities.gh.repositories[0]: \#(repository)"""#),
            (#""repositories": [7]"#, "$.identities.gh.repositories[0]: expected a string, got number"),
            (#""repositories": ["docs", "docs"]"#, #"$.identities.gh.repositories[1]: repository "docs" is listed twice"#),
            (#""repositoryIds": []"#,
             "$.identities.gh.repositoryIds: an empty list limits nothing; remove the key for a token on every repository of the installation"),
            (#""repositoryIds": [0]"#, "$.identities.gh.repositoryIds[0]: must be a repository's ID, a positive integer, got 0"),
            (#""repositoryIds": ["42"]"#, "$.identities.gh.repositoryIds[0]: expected an integer, got string"),
            (#""repositoryIds": [42, 42]"#, "$.identities.gh.repositoryIds[1]: repository ID 42 is listed twice"),
            (#""permissions": {}"#,
             "$.identities.gh.permissions: an empty object limits nothing; remove the key for a token with every permission of the installation"),
            (#""permissions": ["contents"]"#, "$.identities.gh.permissions: expected an object, got array"),
            (#""permissions": {"Contents": "read"}"#,
             #"$.identities.gh.permissions.Contents: "Contents" is not a GitHub permission name (lower-case letters, digits and "_", such as contents or pull_requests)"#),
            (#""permissions": {"issues": "owner"}"#, #"$.identities.gh.permissions.issues: expected one of "read", "write", "admin", got "owner""#),
            (#""permissions": {"issues": true}"#, "$.identities.gh.permissions.issues: expected a string, got boolean"),
        ]
        for (member, expected) in table {
            // The member replaces the required key of its name, if it is one.
            let name = String(member.prefix { $0 != ":" })
            let required = Self.required.split(separator: ", ").filter { !$0.hasPrefix(name) }.joined(separator: ", ")
            XCTAssertEqual(try errors(member, required: required), [expected], member)
        }
    }

    func testAListOfMoreThan500RepositoriesIsRefused() throws {
        let names = (0...500).map { "\"r\($0)\"" }.joined(separator: ", ")
        XCTAssertEqual(try errors(#""repositories": [\#(names)]"#),
                       ["$.identities.gh.repositories: GitHub takes at most 500 repositories in a token request, got 501"])
        let ids = (1...501).map(String.init).joined(separator: ", ")
        XCTAssertEqual(try errors(#""repositoryIds": [\#(ids)]"#),
                       ["$.identities.gh.repositoryIds: GitHub takes at most 500 repositories in a token request, got 501"])
    }

    func testAKeyFileThatIsNoKeyIsReportedWithoutItsContent() throws {
        let junk = "-----BEGIN RSA PRIVATE KEY-----\nTm90QUtleUF0QWxsSnVzdFNvbWVUZXh0\n-----END RSA PRIVATE KEY-----\n"
        let errors = try errors(pem: junk)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].hasPrefix("$.identities.gh.clientKeyFile: not a usable PEM private key ("), errors[0])
        XCTAssertTrue(errors[0].hasSuffix("): app.pem"), errors[0])
        XCTAssertFalse(errors[0].contains("Tm90QUtl"))
    }

    func testOAuthKeysTheGrantDoesNotUseAreRefusedWithWhy() throws {
        let unused = "is not used by the github_app_installation grant: "
        let narrows = "GitHub narrows an installation token with repositories, repositoryIds and permissions"
        let table: [(String, String)] = [
            (#""tokenUrl": "https://api.github.com/x""#, "tokenUrl \(unused)the token comes from githubApiUrl (default https://api.github.com)"),
            (#""issuer": "https://github.com""#, "issuer \(unused)GitHub's API is not discovered; githubApiUrl names it"),
            (#""clientId": "Iv1.x""#, "clientId \(unused)the App JWT's iss is appId, which may hold the App's client ID"),
            (#""clientSecret": "s""#, "clientSecret \(unused)a GitHub App signs an App JWT with clientKeyFile and sends no secret"),
            (#""clientAuth": "private_key_jwt""#, "clientAuth \(unused)a GitHub App always authenticates with an App JWT signed with clientKeyFile"),
            (#""clientAssertionFile": "token""#, "clientAssertionFile \(unused)a GitHub App signs its own App JWT with clientKeyFile"),
            (#""clientKeyId": "k1""#, "clientKeyId \(unused)GitHub's App JWT has no kid"),
            (#""clientAssertionAlg": "PS256""#, "clientAssertionAlg \(unused)GitHub verifies App JWTs with RS256 only"),
            (#""clientAssertionAudience": "issuer""#, "clientAssertionAudience \(unused)GitHub's App JWT has no aud"),
            (#""clientCertFile": "cert.pem""#, "clientCertFile \(unused)GitHub registers the App's key, not a certificate"),
            (#""clientCertHeaders": ["x5t"]"#, "clientCertHeaders \(unused)GitHub registers the App's key, not a certificate"),
            (#""sendClientIdWithAssertion": false"#,
             "sendClientIdWithAssertion \(unused)the App JWT goes in the Authorization header, with no form"),
            (#""scope": "repo""#, "scope \(unused)\(narrows)"),
            (#""audience": "api""#, "audience \(unused)\(narrows)"),
            (#""resource": "https://api.github.com/""#, "resource \(unused)\(narrows)"),
            (#""params": {"x": "y"}"#, "params \(unused)the request is GitHub's JSON, not an OAuth form"),
            (#""responseFields": {"token": "token"}"#, "responseFields \(unused)GitHub's answer always has token and expires_at"),
            (#""defaultExpiresInSeconds": 60"#, "defaultExpiresInSeconds \(unused)GitHub's answer always says when the token expires (expires_at)"),
            (#""dpop": true"#, "dpop \(unused)GitHub does not bind installation tokens with DPoP"),
            (#""username": "u", "password": "p""#, "username is only used by the password grant, not by the github_app_installation grant"),
            (#""refreshToken": "r""#,
             "refreshToken is only used by the refresh_token, authorization_code and device_code grants, not by the github_app_installation grant"),
            (#""assertion": "a""#, "assertion is only used by extension grants, not by the github_app_installation grant"),
        ]
        for (member, expected) in table {
            let key = String(member.dropFirst().prefix { $0 != "\"" })
            XCTAssertEqual(try errors(member).first, "$.identities.gh.\(key): \(expected)", member)
        }
    }

    func testTheGrantsKeysAreRefusedForOtherGrants() throws {
        let other = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "#
            + #""appId": "1", "installationId": 2, "githubApiUrl": "https://api.github.com", "repositories": ["a"], "#
            + #""repositoryIds": [1], "permissions": {"contents": "read"} } } }"#
        XCTAssertEqual(describe(configErrors(other)), ["appId", "installationId", "githubApiUrl", "repositories", "repositoryIds", "permissions"]
            .map { "$.identities.x.\($0): \($0) is only used by the github_app_installation grant, not by the client_credentials grant" })
    }
}
