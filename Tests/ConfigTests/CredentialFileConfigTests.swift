import CertificateTestSupport
import Config
import Crypto
import Foundation
import OAuth2
import SafeText
import XCTest

/// `clientAuth: "client_assertion_file"` with `clientAssertionFile`, and the credential files
/// the config records for the token thread to read again (`Identity.credentialFiles`).
final class CredentialFileConfigTests: XCTestCase {
    /// An unsigned JWT expiring at `exp` (its signature is the IdP's to check).
    private func jwt(exp: Int) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"RS256","kid":"k"}"#) + "." + part(#"{"iss":"https://kubernetes.default.svc","exp":\#(exp)}"#) + ".c2ln"
    }

    private var validJWT: String { jwt(exp: 4_000_000_000) }

    /// Identity `x` of `body`, decoded beside `files` (whose directory is gone once decoded).
    private func decoded(_ body: String, files: [String: String]) throws -> Identity? {
        switch try decodeConfig(identityJSON(body), besideFiles: files) {
        case .success(let config): return try XCTUnwrap(config.identities["x"])
        case .failure(let errors):
            XCTFail("\(errors)")
            return nil
        }
    }

    /// The errors of `body` beside `files`, with the temporary directory's path taken out.
    private func errors(_ body: String, files: [String: String] = [:]) throws -> [String] {
        try configErrors(identityJSON(body), besideFiles: files).map { $0.replacing(#/ /\S+/(\w+)$/#) { " \($0.1)" } }
    }

    func testClientAssertionFileSendsTheFilesJWTWithTheClientId() throws {
        let identity = try XCTUnwrap(try decoded(#""clientId": "app", "clientAuth": "client_assertion_file", "#
                                                 + #""clientAssertionFile": "token""#, files: ["token": validJWT + "\n"]))
        XCTAssertEqual(identity.clientAuth, .clientAssertion(id: "app", assertion: Secret(validJWT)))
        XCTAssertEqual(identity.credentialFiles.map(\.key), ["clientAssertionFile"])
        XCTAssertEqual(identity.credentialFiles.map(\.role), [.clientAssertion])
        XCTAssertTrue(identity.credentialFiles[0].path.hasPrefix("/") && identity.credentialFiles[0].path.hasSuffix("/token"))
    }

    func testAnExtensionGrantMaySendTheAssertionWithoutAClientId() throws {
        let identity = try XCTUnwrap(try decoded(#""grant": "urn:ietf:params:oauth:grant-type:token-exchange", "#
                                                 + #""clientAuth": "client_assertion_file", "clientAssertionFile": "token", "#
                                                 + #""subjectTokenFile": "subject", "subjectTokenType": "urn:ietf:params:oauth:token-type:jwt""#,
                                                 files: ["token": validJWT, "subject": "subject-token"]))
        XCTAssertEqual(identity.clientAuth, .clientAssertion(id: nil, assertion: Secret(validJWT)))
        XCTAssertEqual(identity.credentialFiles.map(\.key), ["subjectTokenFile", "clientAssertionFile"])
    }

    /// The refusals, each with its JSON path; none quotes the file.
    func testClientAssertionFileRefusals() throws {
        let method = #""clientId": "app", "clientAuth": "client_assertion_file""#
        let cases: [(String, [String: String], [String])] = [
            (method, [:], ["$.identities.x.clientAuth: clientAuth client_assertion_file needs clientAssertionFile"]),
            (method + #", "clientAssertionFile": "missing""#, [:], ["$.identities.x.clientAssertionFile: no such file: missing"]),
            (method + #", "clientAssertionFile": "token""#, ["token": " \n"], ["$.identities.x.clientAssertionFile: file is empty: token"]),
            (method + #", "clientAssertionFile": "token""#, ["token": "opaque-platform-token"],
             ["$.identities.x.clientAssertionFile: not a JWT (a compact JWS: three base64url parts separated by dots): token"]),
            (method + #", "clientAssertionFile": "token", "clientSecret": "s""#, ["token": validJWT],
             ["$.identities.x.clientAuth: clientAuth client_assertion_file sends the JWT in clientAssertionFile; remove the client secret"]),
            (method + #", "clientAssertionFile": "token", "clientSecretFile": "token""#, ["token": validJWT],
             ["$.identities.x.clientAuth: clientAuth client_assertion_file sends the JWT in clientAssertionFile; remove the client secret"]),
            (method + #", "clientAssertionFile": "token", "clientKeyId": "k1""#, ["token": validJWT],
             ["$.identities.x.clientKeyId: clientKeyId is only used by clientAuth private_key_jwt, not by client_assertion_file"]),
            (method + #", "clientAssertionFile": "token", "clientAssertionAudience": "tokenUrl""#, ["token": validJWT],
             ["$.identities.x.clientAssertionAudience: clientAssertionAudience is only used by clientAuth private_key_jwt and "
              + "client_secret_jwt, not by client_assertion_file"]),
            (#""clientId": "app", "clientSecret": "s", "clientAssertionFile": "token""#, ["token": validJWT],
             ["$.identities.x.clientAssertionFile: clientAssertionFile is only used by clientAuth client_assertion_file, not by basic"]),
            (#""clientId": "app", "clientAuth": "private_key_jwts""#, [:],
             [#"$.identities.x.clientAuth: expected basic, post, none, private_key_jwt, client_secret_jwt or client_assertion_file, "#
              + #"got "private_key_jwts""#]),
        ]
        for (body, files, expected) in cases {
            let found = try errors(body, files: files)
            XCTAssertEqual(found, expected, body)
            XCTAssertFalse(found.joined().contains("opaque-platform"), body)
        }
    }

    func testAnExpiredAssertionFileLoadsAndCheckWarnsNamingTheKeyFileAndExp() throws {
        let json = identityJSON(#""clientId": "app", "clientAuth": "client_assertion_file", "clientAssertionFile": "token""#)
        let config = try decodeConfig(json, besideFiles: ["token": jwt(exp: 1_795_726_800)]).get()
        let warnings = config.expiredCredentialWarnings(at: 1_795_726_801)
        XCTAssertEqual(warnings.map { $0.replacing(#/ /\S+/token /#, with: " token ") },
                       ["$.identities.x.clientAssertionFile: clientAssertionFile token holds a JWT that expired at 2026-11-26T21:00:00Z"])
        XCTAssertEqual(config.expiredCredentialWarnings(at: 1_795_726_799), [])
    }

    func testAnAssertionFileWithoutClientIdLoadsAndCheckWarns() throws {
        let without = identityJSON(#""clientAuth": "client_assertion_file", "clientAssertionFile": "token""#)
        let config = try decodeConfig(without, besideFiles: ["token": jwt(exp: 1_795_726_800)]).get()
        XCTAssertEqual(config.assertionWithoutClientIdWarnings, [
            "$.identities.x.clientId: not set, so the token requests of clientAuth client_assertion_file carry no client_id: "
                + "Microsoft Entra ID requires it (AADSTS900144); an IdP that knows the client by the assertion's sub does not",
        ])
        let with = identityJSON(#""clientId": "app", "clientAuth": "client_assertion_file", "clientAssertionFile": "token""#)
        XCTAssertEqual(try decodeConfig(with, besideFiles: ["token": jwt(exp: 1_795_726_800)]).get().assertionWithoutClientIdWarnings, [])
    }

    func testEveryCredentialFileTheIdentityUsesIsRecorded() throws {
        let key = try PrivateKey.generate(.ecP256).pemRepresentation()
        let certificate = try IssuedCertificate.selfSigned(forKey: key).pem
        let files = ["secret": "s", "password": "p", "refresh": "r", "assertion": "a", "subject": "t", "actor": "u", "key.pem": key,
                     "cert.pem": certificate]
        let cases: [(String, [String])] = [
            (#""clientId": "c", "clientSecretFile": "secret""#, ["clientSecretFile"]),
            (#""grant": "password", "clientId": "c", "clientSecretFile": "secret", "username": "u", "passwordFile": "password""#,
             ["clientSecretFile", "passwordFile"]),
            (#""grant": "refresh_token", "clientId": "c", "refreshTokenFile": "refresh""#, ["refreshTokenFile"]),
            (#""grant": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertionFile": "assertion""#, ["assertionFile"]),
            (#""grant": "urn:ietf:params:oauth:grant-type:token-exchange", "subjectTokenFile": "subject", "#
             + #""subjectTokenType": "urn:x:jwt", "actorTokenFile": "actor", "actorTokenType": "urn:x:jwt""#,
             ["subjectTokenFile", "actorTokenFile"]),
            (#""clientId": "c", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#, ["clientKeyFile"]),
            (#""clientId": "c", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientCertFile": "cert.pem""#,
             ["clientKeyFile", "clientCertFile"]),
            (#""clientId": "c", "clientSecret": "inline""#, []),
            // A seed is read at start only: a person's login replaces it.
            (#""grant": "device_code", "clientId": "c", "deviceAuthorizationUrl": "https://idp/device", "refreshTokenFile": "refresh""#, []),
        ]
        for (body, keys) in cases {
            let identity = try XCTUnwrap(try decoded(body, files: files), body)
            XCTAssertEqual(identity.credentialFiles.map(\.key), keys, body)
            for file in identity.credentialFiles {
                XCTAssertNoThrow(try identity.withCredential(file.role, content: files[String(file.path.split(separator: "/").last!)]!),
                                 "\(body): \(file.key)")
            }
        }
    }
}
