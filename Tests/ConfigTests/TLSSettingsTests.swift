import Config
import Endpoints
import FileTestSupport
import XCTest

/// `tls` on routes and identities.
final class TLSSettingsTests: XCTestCase {
    private let pin = "sha256/" + String(repeating: "A", count: 43) + "="  // base64 of 32 zero bytes

    private func httpsRouteJSON(tls: String) -> String {
        #"{ "routes": [ { "upstream": "https://svc", "tls": \#(tls) } ] }"#
    }

    func testTLSSettingsAreDecodedWithPathsRelativeToTheConfig() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for name in ["ca.pem", "client.pem", "client.key"] { try directory.write(name, "pem") }
        let json = httpsRouteJSON(tls: #"""
        { "caFile": "ca.pem", "serverName": "Svc.Internal", "pins": ["\#(pin)"],
          "clientCert": "client.pem", "clientKey": "client.key", "insecureSkipVerify": true }
        """#)
        let tls = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).routes.first?.tls)
        XCTAssertEqual(tls, TLSSettings(caFile: directory.path + "/ca.pem", serverName: "svc.internal", pins: [pin],
                                        clientCert: directory.path + "/client.pem", clientKey: directory.path + "/client.key",
                                        insecureSkipVerify: true))
        XCTAssertEqual(tls.pinnedSHA256Digests, [[UInt8](repeating: 0, count: 32)])
    }

    func testVerificationIsOnByDefault() throws {
        let tls = try XCTUnwrap(decodeConfig(httpsRouteJSON(tls: "{}")).routes.first?.tls)
        XCTAssertFalse(tls.insecureSkipVerify)
        XCTAssertEqual(tls.pins, [])
    }

    func testPinThatIsNotA32ByteHashIsReported() {
        let errors = configErrors(httpsRouteJSON(tls: #"{ "pins": ["\#(pin)", "sha256/AAAA", "md5/AAAA"] }"#))
        XCTAssertEqual(errors.map(\.path), ["$.routes[0].tls.pins[1]", "$.routes[0].tls.pins[2]"])
    }

    func testClientCertWithoutKeyIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("client.pem", "pem")
        let errors = configErrors(httpsRouteJSON(tls: #"{ "clientCert": "client.pem" }"#), baseDirectory: directory.path)
        XCTAssertEqual(describe(errors), ["$.routes[0].tls.clientKey: required when clientCert is set"])
    }

    func testTrustDefaultsToTheSystemStoreBesidesCAFileAndCanBeCAFileOnly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("ca.pem", "pem")
        let byDefault = try XCTUnwrap(decodeConfig(httpsRouteJSON(tls: #"{ "caFile": "ca.pem" }"#),
                                                   baseDirectory: directory.path).routes.first?.tls)
        XCTAssertEqual(byDefault.trust, .systemAndCaFile)
        let pinned = try XCTUnwrap(decodeConfig(httpsRouteJSON(tls: #"{ "caFile": "ca.pem", "trust": "caFileOnly" }"#),
                                                baseDirectory: directory.path).routes.first?.tls)
        XCTAssertEqual(pinned.trust, .caFileOnly)
    }

    func testCAFileOnlyWithoutCAFileOrAnUnknownTrustIsReported() {
        XCTAssertEqual(describe(configErrors(httpsRouteJSON(tls: #"{ "trust": "caFileOnly" }"#))),
                       [#"$.routes[0].tls.trust: "caFileOnly" needs caFile: the CA certificates to trust instead of the system store"#])
        XCTAssertEqual(describe(configErrors(httpsRouteJSON(tls: #"{ "trust": "none" }"#))),
                       [#"$.routes[0].tls.trust: must be "systemAndCaFile" or "caFileOnly", got "none""#])
    }

    func testMissingCAFileIsReported() {
        XCTAssertEqual(describe(configErrors(httpsRouteJSON(tls: #"{ "caFile": "/nonexistent/ca.pem" }"#))),
                       ["$.routes[0].tls.caFile: no such file: /nonexistent/ca.pem"])
    }

    func testIdentityTLSWithPlainHTTPTokenURLIsReported() {
        let json = #"{ "identities": { "x": { "tokenUrl": "http://idp/token", "clientId": "c", "tls": {} } } }"#
        XCTAssertEqual(describe(configErrors(json)), ["$.identities.x.tls: tls is set but tokenUrl is http://"])
    }
}
