import Config
import FileTestSupport
import XCTest

/// `restartOnlyChanges`: what a reload refuses because the running listeners and threads were made
/// from it.
final class ReloadCompatibilityTests: XCTestCase {
    private func config(_ top: String = "") throws -> RelayConfig {
        try decodeConfig("""
        { "listen": "127.0.0.1:8180", \(top) "routes": [ { "upstream": "http://127.0.0.1:9001" } ] }
        """)
    }

    func testRoutesIdentitiesLimitsAndLoggingMayChange() throws {
        let old = try config()
        let new = try decodeConfig("""
        { "listen": "127.0.0.1:8180", "accessLog": false, "limits": { "idleTimeoutSeconds": 5 },
          "identities": { "orders": { "tokenUrl": "http://127.0.0.1:9/token", "clientId": "c", "clientSecret": "s" } },
          "routes": [ { "upstream": "http://127.0.0.1:9002", "identity": "orders" },
                      { "match": { "pathPrefix": "/b/" }, "upstream": "http://127.0.0.1:9003" } ] }
        """)
        XCTAssertEqual(old.restartOnlyChanges(to: new), [])
    }

    func testEachRestartOnlyKeyIsReportedWithItsPath() throws {
        let old = try config()
        XCTAssertEqual(old.restartOnlyChanges(to: try decodeConfig("""
            { "listen": "127.0.0.1:8181", "routes": [ { "upstream": "http://127.0.0.1:9001" } ] }
            """)), ["$.listen: changed from 127.0.0.1:8180 to 127.0.0.1:8181; this takes a restart, not a reload"])
        XCTAssertEqual(old.restartOnlyChanges(to: try config(#""workers": 3,"#)).map { $0.prefix(9) }, ["$.workers"])
        XCTAssertEqual(old.restartOnlyChanges(to: try config(#""metrics": false,"#)),
                       ["$.metrics: changed from true to false; this takes a restart, not a reload"])
        XCTAssertEqual(old.restartOnlyChanges(to: try config(#""admin": null,"#)),
                       ["$.admin: changed from 127.0.0.1:9180 to null; this takes a restart, not a reload"])
        let both = old.restartOnlyChanges(to: try decodeConfig("""
            { "listen": "[::1]:8180", "workers": 2, "routes": [ { "upstream": "http://127.0.0.1:9001" } ] }
            """))
        XCTAssertEqual(both.map { String($0.prefix { $0 != ":" }) }, ["$.listen", "$.workers"])
    }

    func testTheTLSListenerAddressIsFixedButItsCertificateIsNot() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        for name in ["a.pem", "a.key", "b.pem", "b.key"] {
            try dir.write(name, "-----BEGIN X-----\n-----END X-----\n")
        }
        func withTLS(_ address: String, _ cert: String) throws -> RelayConfig {
            try decodeConfig("""
            { "listen": "127.0.0.1:8180",
              "listenTls": { "address": "\(address)", "certFile": "\(cert).pem", "keyFile": "\(cert).key" },
              "routes": [ { "upstream": "http://127.0.0.1:9001" } ] }
            """, baseDirectory: dir.path)
        }
        let old = try withTLS("127.0.0.1:8443", "a")
        XCTAssertEqual(old.restartOnlyChanges(to: try withTLS("127.0.0.1:8443", "b")), [])
        XCTAssertEqual(old.restartOnlyChanges(to: try withTLS("127.0.0.1:8444", "a")).count, 1)
        XCTAssertEqual(old.restartOnlyChanges(to: try config()),
                       ["$.listenTls.address: changed from 127.0.0.1:8443 to none; this takes a restart, not a reload"])
    }
}
