import Crypto
import Endpoints
import OAuth2
import SafeText
import TokenStore
import XCTest

final class SettingsFingerprintTests: XCTestCase {
    private func identity() -> Identity {
        Identity(name: "orders", tokenUrl: HTTPURL(scheme: .https, host: "idp.example", path: "/token"),
                 grant: .password(username: "svc", password: Secret("hunter2")),
                 clientAuth: .basic(id: "orders-relay", secret: Secret("client-secret")),
                 scope: "orders.read", audience: "orders-api", resource: ["https://orders.internal/"])
    }

    func testTheSameSettingsGiveTheSameFingerprint() {
        XCTAssertEqual(SettingsFingerprint(identity()), SettingsFingerprint(identity()))
    }

    func testEverySettingItCoversChangesIt() {
        let base = SettingsFingerprint(identity())
        let changes: [(String, (inout Identity) -> Void)] = [
            ("tokenUrl", { $0.tokenUrl?.path = "/other" }),
            ("client id", { $0.clientAuth = .basic(id: "other", secret: Secret("client-secret")) }),
            ("client auth", { $0.clientAuth = .post(id: "orders-relay", secret: Secret("client-secret")) }),
            ("grant", { $0.grant = .clientCredentials }),
            ("username", { $0.grant = .password(username: "other", password: Secret("hunter2")) }),
            ("scope", { $0.scope = "orders.write" }),
            ("no scope", { $0.scope = nil }),
            ("audience", { $0.audience = "other" }),
            ("resource", { $0.resource.append("https://more/") }),
            ("an authorization parameter", { $0.authorizationParams = ["user_scope": "search:read"] }),
            ("the member the token is read from", { $0.responseFields.token = "authed_user.access_token" }),
        ]
        for (what, change) in changes {
            var changed = identity()
            change(&changed)
            XCTAssertNotEqual(SettingsFingerprint(changed), base, what)
        }
    }

    /// A grant on behalf of the caller: its subject and actor token types and its extra
    /// parameters are settings; the actor token is a secret and stays out (CallerEntryName keys
    /// the caller entries' names with it). Other grants' parameters stay out as before.
    func testACallerGrantsTokenTypesAndParamsChangeItButNotItsActorToken() {
        func caller(_ subjectType: String = CallerGrant.accessTokenType, actor: ExchangedToken = ExchangedToken(),
                    params: [String: String] = [:]) -> SettingsFingerprint {
            var changed = identity()
            changed.grant = .caller(.tokenExchange(subjectTokenType: subjectType, actor: actor))
            changed.params = params
            return SettingsFingerprint(changed)
        }
        let base = caller()
        XCTAssertNotEqual(caller("urn:ietf:params:oauth:token-type:jwt"), base, "subject token type")
        XCTAssertNotEqual(caller(actor: ExchangedToken(type: "urn:ietf:params:oauth:token-type:jwt")), base, "actor token type")
        XCTAssertNotEqual(caller(params: ["requested_token_type": "urn:ietf:params:oauth:token-type:jwt"]), base, "a parameter")
        XCTAssertNotEqual(caller(params: ["requested_token_type": "a"]), caller(params: ["requested_token_type": "b"]), "its value")
        XCTAssertEqual(caller(actor: ExchangedToken(token: Secret("actor-1"))), caller(actor: ExchangedToken(token: Secret("actor-2"))),
                       "the actor token is a secret")
        var withParams = identity()
        withParams.params = ["requested_token_type": "x"]
        XCTAssertEqual(SettingsFingerprint(withParams), SettingsFingerprint(identity()), "another grant's encoding is unchanged")
    }

    /// Secrets are left out: a rotated secret keeps the token, and the clear-text fingerprint
    /// gives nothing to guess a password against.
    func testSecretsDoNotEnterIt() {
        var changed = identity()
        changed.grant = .password(username: "svc", password: Secret("other-password"))
        changed.clientAuth = .basic(id: "orders-relay", secret: Secret("other-secret"))
        XCTAssertEqual(SettingsFingerprint(changed), SettingsFingerprint(identity()))
    }

    /// A DPoP key file's thumbprint is part of the settings: a token bound to one key is never
    /// read back for another.
    func testADPoPKeyFileChangesIt() throws {
        var first = identity(), second = identity()
        first.dpop = .key(try DPoPKey(privateKey: PrivateKey.generate(.ecP256)))
        second.dpop = .key(try DPoPKey(privateKey: PrivateKey.generate(.ecP256)))
        XCTAssertNotEqual(SettingsFingerprint(first), SettingsFingerprint(identity()))
        XCTAssertNotEqual(SettingsFingerprint(first), SettingsFingerprint(second))
    }

    /// RFC 8705: a token bound to a client certificate is useless with its renewal, so a renewed
    /// certificate (another thumbprint at the same path) is other settings; the CA file is not.
    func testARenewedClientCertificateChangesItButItsPathOrCAFileAloneDoNot() {
        func withTLS(_ thumbprint: String?, caFile: String? = nil) -> Identity {
            var changed = identity()
            changed.tls = TLSSettings(caFile: caFile, clientCert: "/tls/client.pem", clientKey: "/tls/client.key")
            changed.tls?.clientCertThumbprint = thumbprint
            return changed
        }
        XCTAssertEqual(SettingsFingerprint(withTLS(nil)), SettingsFingerprint(identity()))
        XCTAssertEqual(SettingsFingerprint(withTLS(nil, caFile: "/ca.pem")), SettingsFingerprint(identity()))
        XCTAssertNotEqual(SettingsFingerprint(withTLS("thumbprint-one")), SettingsFingerprint(identity()))
        XCTAssertNotEqual(SettingsFingerprint(withTLS("thumbprint-one")), SettingsFingerprint(withTLS("thumbprint-two")))
        XCTAssertEqual(SettingsFingerprint(withTLS("thumbprint-one")), SettingsFingerprint(withTLS("thumbprint-one", caFile: "/ca.pem")))
    }

    /// Entries written before DPoP existed still open: without a key file the encoding is the
    /// same (the value below is SHA-256 of the canonical encoding, computed independently).
    func testWithoutADPoPKeyFileTheEncodingIsUnchanged() {
        XCTAssertEqual(SettingsFingerprint(identity()).description, "cae1502f417d30b4")
        var generated = identity()
        generated.dpop = .generatedKey(.es256)
        XCTAssertEqual(SettingsFingerprint(generated), SettingsFingerprint(identity()), "a generated key's tokens are never stored")
    }

    /// A GitHub App's token depends on the App, the installation (in the token URL) and what
    /// narrows it; a rotated App key keeps it (the same App asked for it).
    func testAGitHubAppsIDAndLimitsChangeIt() throws {
        let keys = try (0..<2).map { _ in try GitHubAppInstallation.appKey(pem: PrivateKey.generate(.rsa(bits: 2048)).pemRepresentation()) }
        func app(key: ClientAssertionKey = keys[0], _ configure: (inout GitHubAppInstallation) -> Void = { _ in }) throws -> Identity {
            var installation = GitHubAppInstallation(appID: "12345", key: key, installationID: 678, repositories: ["docs"],
                                                     permissions: ["contents": .read])
            configure(&installation)
            return Identity(name: "gh", tokenUrl: installation.accessTokensURL(api: GitHubAppInstallation.defaultAPIURL),
                            grant: .gitHubAppInstallation(installation))
        }
        let base = SettingsFingerprint(try app())
        XCTAssertEqual(SettingsFingerprint(try app(key: keys[1])), base, "another key of the same App")
        let changes: [(String, (inout GitHubAppInstallation) -> Void)] = [
            ("app", { $0.appID = "Iv23liAbCdEf01234567" }),
            ("installation", { $0.installationID = 679 }),
            ("repositories", { $0.repositories = ["docs", "site"] }),
            ("repository IDs", { $0.repositoryIDs = [42] }),
            ("permission level", { $0.permissions = ["contents": .write] }),
            ("no limits", { ($0.repositories, $0.permissions) = ([], [:]) }),
        ]
        for (what, change) in changes {
            XCTAssertNotEqual(SettingsFingerprint(try app(change)), base, what)
        }
    }

    /// A Google service account's key file is its client: another account, or another user it
    /// acts for, is another token; a rotated key of the same account is not.
    func testAServiceAccountAndItsDelegatedUserChangeIt() throws {
        func account(_ email: String, subject: String?, key: PrivateKey) throws -> Identity {
            let signingKey = try ClientAssertionKey(privateKey: key, algorithm: .rs256, keyID: "k")
            let serviceAccount = ServiceAccountKey(clientEmail: email, signingKey: signingKey,
                                                   tokenURI: HTTPURL(scheme: .https, host: "oauth2.googleapis.com", path: "/token"))
            return Identity(name: "gsa", tokenUrl: serviceAccount.tokenURI,
                            grant: .serviceAccount(ServiceAccountGrant(key: serviceAccount, token: .tokenEndpoint(scope: "s", subject: subject))),
                            scope: "s")
        }
        let key = try PrivateKey.generate(.rsa(bits: 2048))
        let base = SettingsFingerprint(try account("a@p.iam.gserviceaccount.com", subject: nil, key: key))
        XCTAssertNotEqual(SettingsFingerprint(try account("b@p.iam.gserviceaccount.com", subject: nil, key: key)), base)
        XCTAssertNotEqual(SettingsFingerprint(try account("a@p.iam.gserviceaccount.com", subject: "u@example.com", key: key)), base)
        XCTAssertEqual(SettingsFingerprint(try account("a@p.iam.gserviceaccount.com", subject: nil, key: PrivateKey.generate(.rsa(bits: 2048)))),
                       base)
    }

    /// Entries of identities without authorization parameters or another token member open as
    /// before; the other response fields (expiry, type, refresh token) do not choose the token.
    func testDefaultResponseFieldsAndNoAuthorizationParametersLeaveItUnchanged() throws {
        var changed = identity()
        changed.responseFields = ResponseFields(expiry: "authed_user.expires_in", type: "authed_user.token_type",
                                                refreshToken: "authed_user.refresh_token", typeValues: ["user": "Bearer"])
        changed.authorizationParams = [:]
        XCTAssertEqual(SettingsFingerprint(changed).description, "cae1502f417d30b4")
    }

    func testAuthorizationParameterNamesAndValuesCannotRunIntoEachOther() {
        var first = identity(), second = identity()
        first.authorizationParams = ["a": "bc"]
        second.authorizationParams = ["ab": "c"]
        XCTAssertNotEqual(SettingsFingerprint(first), SettingsFingerprint(second))
    }

    /// Length prefixes keep a boundary from moving between two parts.
    func testPartsCannotRunIntoEachOther() {
        var first = identity(), second = identity()
        first.scope = "a"
        first.audience = "bc"
        second.scope = "ab"
        second.audience = "c"
        XCTAssertNotEqual(SettingsFingerprint(first), SettingsFingerprint(second))
    }
}
