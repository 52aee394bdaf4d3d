import Config
import Crypto
import JOSE
import OAuth2
import XCTest

/// `dpop` on identities, `certificateBoundUpstream` on routes, and what `check` says about them.
final class DPoPConfigTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let ed25519 = try! PrivateKey.generate(.ed25519)

    /// A config of `json` decoded next to `key.pem` holding `key` (or `pem`) and three certificate
    /// files, two of them alike.
    private func decode(_ json: String, key: PrivateKey? = ec, pem: String? = nil) throws -> Result<RelayConfig, ConfigErrors> {
        try decodeConfig(json, besideFiles: files(key, pem: pem))
    }

    private func files(_ key: PrivateKey?, pem: String?) throws -> [String: String] {
        ["key.pem": try pem ?? key?.pemRepresentation() ?? "", "a.pem": "certificate a", "b.pem": "certificate b",
         "a-copy.pem": "certificate a"]
    }

    private func dpop(_ value: String, key: PrivateKey? = ec) throws -> DPoPBinding? {
        guard case .success(let config) = try decode(identityJSON(#""clientId": "svc", "dpop": \#(value)"#), key: key) else {
            XCTFail("did not decode")
            return nil
        }
        return config.identities["x"]?.dpop
    }

    private func errors(_ json: String, key: PrivateKey? = ec, pem: String? = nil) throws -> [String] {
        try configErrors(json, besideFiles: files(key, pem: pem))
    }

    private func dpopErrors(_ value: String, key: PrivateKey? = ec, pem: String? = nil) throws -> [String] {
        try errors(identityJSON(#""clientId": "svc", "dpop": \#(value)"#), key: key, pem: pem)
    }

    // MARK: dpop

    func testTrueGeneratesAnES256KeyAndFalseIsOff() throws {
        XCTAssertEqual(try dpop("true"), .generatedKey(.es256))
        XCTAssertNil(try dpop("false"))
        XCTAssertEqual(try dpop(#"{}"#), .generatedKey(.es256))
        XCTAssertEqual(try dpop(#"{ "alg": "EdDSA" }"#), .generatedKey(.edDSA))
    }

    func testAKeyFileIsReadWithItsDefaultOrGivenAlgorithm() throws {
        XCTAssertEqual(try dpop(#"{ "keyFile": "key.pem" }"#), .key(try DPoPKey(privateKey: Self.ec)))
        XCTAssertEqual(try dpop(#"{ "keyFile": "key.pem" }"#, key: Self.rsa)?.algorithm, .rs256)
        XCTAssertEqual(try dpop(#"{ "keyFile": "key.pem", "alg": "PS256" }"#, key: Self.rsa)?.algorithm, .ps256)
        XCTAssertEqual(try dpop(#"{ "keyFile": "key.pem" }"#, key: Self.ed25519)?.algorithm, .edDSA)
    }

    func testTwoKeysAreEqualOnlyWithTheSamePublicKeyAndAlgorithm() throws {
        XCTAssertEqual(try DPoPKey(privateKey: Self.ec), try DPoPKey(privateKey: Self.ec))
        XCTAssertNotEqual(try DPoPKey(privateKey: Self.ec), try DPoPKey(privateKey: PrivateKey.generate(.ecP256)))
        XCTAssertNotEqual(try DPoPKey(privateKey: Self.rsa, algorithm: .rs256), try DPoPKey(privateKey: Self.rsa, algorithm: .ps256))
    }

    func testAnAlgorithmThatDoesNotFitTheKeyIsReportedAtAlg() throws {
        let errors = try dpopErrors(#"{ "keyFile": "key.pem", "alg": "PS256" }"#, key: Self.ec)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].hasPrefix("$.identities.x.dpop.alg: alg PS256 does not fit the EC P-256 key in /"), errors[0])
    }

    func testUnknownAlgorithmsAndHS256AreRefused() throws {
        for alg in ["HS256", "none", "ES384"] {
            XCTAssertEqual(try dpopErrors(#"{ "alg": "\#(alg)" }"#),
                           [#"$.identities.x.dpop.alg: expected one of ES256, PS256, RS256, EdDSA, got "\#(alg)""#])
        }
    }

    func testRSAAlgorithmsNeedAKeyFile() throws {
        XCTAssertEqual(try dpopErrors(#"{ "alg": "PS256" }"#),
                       ["$.identities.x.dpop.alg: PS256 needs an RSA keyFile: without one the relay generates an ES256 (P-256) or EdDSA (Ed25519) key"])
    }

    func testUnusableKeyFilesAreReportedWithoutTheirContent() throws {
        let junk = "-----BEGIN PRIVATE KEY-----\nTm90QUtleUF0QWxsSnVzdFNvbWVUZXh0\n-----END PRIVATE KEY-----\n"
        let errors = try dpopErrors(#"{ "keyFile": "key.pem" }"#, pem: junk)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].hasPrefix("$.identities.x.dpop.keyFile: not a usable PEM private key ("), errors[0])
        XCTAssertFalse(errors[0].contains("Tm90QUtl"), "never the file's content")
        let missing = try dpopErrors(#"{ "keyFile": "absent.pem" }"#)
        XCTAssertEqual(missing.count, 1)
        XCTAssertTrue(missing[0].hasPrefix("$.identities.x.dpop.keyFile: no such file: /"), missing[0])
        // A public key is not a private key, and the key itself is never printed.
        let publicPEM = try Self.ec.publicKey.pemRepresentation()
        let publicKeyErrors = try dpopErrors(#"{ "keyFile": "key.pem" }"#, pem: publicPEM)
        XCTAssertEqual(publicKeyErrors.count, 1)
        XCTAssertFalse(publicKeyErrors.joined().contains(String(publicPEM.split(separator: "\n")[1].prefix(16))))
    }

    func testOtherValuesAndKeysAreRefused() throws {
        XCTAssertEqual(try dpopErrors(#""yes""#), ["$.identities.x.dpop: expected true, false or an object with keyFile and/or alg, got string"])
        XCTAssertEqual(try dpopErrors(#"{ "keyfile": "key.pem" }"#), [#"$.identities.x.dpop.keyfile: unknown key "keyfile" (did you mean "keyFile"?)"#])
    }

    func testTheDescriptionNamesTheAlgorithmAndThumbprintOnly() throws {
        let key = try DPoPKey(privateKey: Self.ec)
        XCTAssertEqual("\(key)", "ES256 key \(key.thumbprint)")
        XCTAssertEqual(String(reflecting: key), "ES256 key \(key.thumbprint)")
    }

    // MARK: DPoP and injection

    private func dpopRoute(_ inject: String) -> String {
        #"{ "identities": { "svc": { "tokenUrl": "https://idp/token", "clientId": "svc", "dpop": true } }, "#
            + #""routes": [ { "upstream": "https://api.example", "identity": "svc"\#(inject) } ] }"#
    }

    func testADPoPIdentitysRouteInjectsIntoAuthorizationAndSetsNoDPoPHeader() throws {
        XCTAssertEqual(try errors(dpopRoute("")), [])
        XCTAssertEqual(try errors(dpopRoute(#", "inject": { "header": "authorization", "prefix": "Bearer" }"#)), [])
        let message = "identity svc uses DPoP: its tokens go in the Authorization header (\"Authorization: DPoP\" with a DPoP "
            + "proof, RFC 9449 §7.1), so inject must keep header Authorization"
        XCTAssertEqual(try errors(dpopRoute(#", "inject": { "query": "access_token" }"#)), ["$.routes[0].inject: " + message])
        XCTAssertEqual(try errors(dpopRoute(#", "inject": { "header": "X-Token" }"#)), ["$.routes[0].inject: " + message])
        XCTAssertEqual(try errors(dpopRoute(#", "setHeaders": { "DPoP": "x" }"#)),
                       [#"$.routes[0].setHeaders.DPoP: "DPoP" carries the relay's DPoP proof (identity svc uses DPoP) and cannot also be set"#])
    }

    // MARK: certificateBoundUpstream

    private func boundRoute(identityTLS: String?, upstream: String = "https://api.example", routeTLS: String = "",
                            identity: String? = "svc") -> String {
        let tls = identityTLS.map { #", "tls": \#($0)"# } ?? ""
        let name = identity.map { #", "identity": "\#($0)""# } ?? ""
        return #"{ "identities": { "svc": { "tokenUrl": "https://idp/token", "clientId": "svc"\#(tls) } }, "#
            + #""routes": [ { "upstream": "\#(upstream)"\#(name), "certificateBoundUpstream": true\#(routeTLS) } ] }"#
    }

    private let identityCert = #"{ "clientCert": "a.pem", "clientKey": "key.pem" }"#

    func testACertificateBoundRouteTakesTheIdentitysCertificate() throws {
        guard case .success(let config) = try decode(boundRoute(identityTLS: identityCert)) else { return XCTFail("decodes") }
        XCTAssertTrue(config.routes[0].certificateBoundUpstream)
        // The route's own certificate may be the same one: same path, or another file with the same bytes.
        XCTAssertEqual(try errors(boundRoute(identityTLS: identityCert, routeTLS: #", "tls": { "clientCert": "a.pem", "clientKey": "key.pem" }"#)), [])
        XCTAssertEqual(try errors(boundRoute(identityTLS: identityCert,
                                             routeTLS: #", "tls": { "clientCert": "a-copy.pem", "clientKey": "key.pem" }"#)), [])
    }

    func testCheckExplainsACertificateMismatch() throws {
        let prefix = "$.routes[0].certificateBoundUpstream: "
        XCTAssertEqual(try errors(boundRoute(identityTLS: nil)),
                       [prefix + "identity svc presents no client certificate to its token endpoint (identities.svc.tls.clientCert), "
                        + "so its tokens are not bound to one (RFC 8705) and there is none to present upstream"])
        XCTAssertEqual(try errors(boundRoute(identityTLS: #"{ "caFile": "a.pem" }"#)).count, 1)
        XCTAssertEqual(try errors(boundRoute(identityTLS: identityCert, upstream: "http://api.example")),
                       [prefix + "certificateBoundUpstream presents a client certificate, which needs TLS; the upstream is http://"])
        XCTAssertEqual(try errors(boundRoute(identityTLS: nil, identity: nil)),
                       [prefix + "certificateBoundUpstream needs the route's identity: the certificate presented upstream is the "
                        + "identity's tls.clientCert, to which its tokens are bound"])
        let other = try errors(boundRoute(identityTLS: identityCert, routeTLS: #", "tls": { "clientCert": "b.pem", "clientKey": "key.pem" }"#))
        XCTAssertEqual(other.count, 1)
        XCTAssertTrue(other[0].hasPrefix(prefix + "the route's own tls.clientCert ("), other[0])
        XCTAssertTrue(other[0].hasSuffix("the upstream would see a certificate its tokens are not bound to; remove it, the identity's is presented"),
                      other[0])
    }
}
