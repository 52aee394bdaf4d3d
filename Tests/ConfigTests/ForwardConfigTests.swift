import Config
import Endpoints
import FileTestSupport
import Foundation
import XCTest

/// `forward`: the `HTTPS_PROXY` listener's keys, the `proxyAuthFile` it reads, its address
/// against the other listeners', and the warnings of routes it leaves out.
final class ForwardConfigTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    /// Writes `contents` to `name` in the test's directory with the permission bits `mode`.
    private func writeFile(_ name: String, _ contents: String, mode: Int = 0o600) throws {
        let path = try directory.write(name, contents)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    /// A config whose top level has `forward` set to `forward` (JSON text), plus `extra` members.
    private func json(forward: String, _ extra: String = "") -> String {
        #"{ "forward": \#(forward)\#(extra.isEmpty ? "" : ", " + extra) }"#
    }

    private func decode(forward: String, _ extra: String = "") throws -> RelayConfig {
        try decodeConfig(json(forward: forward, extra), baseDirectory: directory.path)
    }

    /// `path: message` of each error for `forward` (JSON text), decoded in the test's directory.
    private func errors(forward: String, _ extra: String = "") -> [String] {
        describe(configErrors(json(forward: forward, extra), baseDirectory: directory.path))
    }

    private func basic(_ pair: String) -> Bool? {
        let value = Array(("Basic " + Data(pair.utf8).base64EncodedString()).utf8)
        return try? decode(forward: #"{ "listen": "127.0.0.1:8181", "proxyAuthFile": "proxy-auth" }"#)
            .forward?.credentials.map { credentials in value.withUnsafeBytes { credentials.admits($0) } }
    }

    // MARK: - Decoding

    func testOnlyListenIsNeededAndTheRestHasItsDefaults() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#)
        XCTAssertEqual(config.forward, ForwardListener(address: HostPort(host: "127.0.0.1", port: 8181)))
        XCTAssertEqual(config.forward?.tunnelOthers, true)
        XCTAssertEqual(config.forward?.connectPorts, [443])
        XCTAssertNil(config.forward?.caDirectory)
        XCTAssertNil(config.forward?.credentials)
    }

    func testWithoutForwardOrWithNullThereIsNoForwardProxy() throws {
        XCTAssertNil(try decodeConfig("{}").forward)
        XCTAssertNil(try decode(forward: "null").forward)
    }

    func testEveryKeyIsDecodedAndTheAuthFileIsReadRelativeToTheConfig() throws {
        try writeFile("proxy-auth", "# tools on this machine\nalice:first secret\r\n\nbob:second:with:colons\n")
        let forward = try XCTUnwrap(decode(forward: """
            { "listen": "[::1]:8181", "tunnelOthers": false, "proxyAuthFile": "proxy-auth",
              "connectPorts": [443, 8443], "caDirectory": "/var/lib/oauth-relay/forward-ca" }
            """).forward)
        XCTAssertEqual(forward.address, HostPort(host: "::1", port: 8181))
        XCTAssertFalse(forward.tunnelOthers)
        XCTAssertEqual(forward.proxyAuthFile, directory.path + "/proxy-auth")
        XCTAssertEqual(forward.connectPorts, [443, 8443])
        XCTAssertEqual(forward.caDirectory, "/var/lib/oauth-relay/forward-ca")
        XCTAssertEqual(forward.credentials?.users, ["alice", "bob"])
        XCTAssertEqual(basic("alice:first secret"), true)
        XCTAssertEqual(basic("bob:second:with:colons"), true)
        XCTAssertEqual(basic("alice:second:with:colons"), false)
    }

    func testPortZeroAsksTheSystemForAPortAndCollidesWithNothing() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:0" }"#, #""listen": "127.0.0.1:0", "admin": "127.0.0.1:0""#)
        XCTAssertEqual(config.forward?.address, HostPort(host: "127.0.0.1", port: 0))
    }

    func testANonLoopbackListenerWithAnAuthFileIsAccepted() throws {
        try writeFile("proxy-auth", "ci:token\n")
        let config = try decode(forward: #"{ "listen": "0.0.0.0:8181", "proxyAuthFile": "proxy-auth" }"#)
        XCTAssertEqual(config.forward?.address, HostPort(host: "0.0.0.0", port: 8181))
        XCTAssertEqual(config.forward?.credentials?.users, ["ci"])
    }

    func testLocalhostCountsAsLoopback() throws {
        XCTAssertEqual(try decode(forward: #"{ "listen": "localhost:8181" }"#).forward?.address.host, "localhost")
    }

    // MARK: - Refusals

    func testBadValuesAreRefusedWithTheirPaths() {
        let table: [(forward: String, expected: [String])] = [
            (#""127.0.0.1:8181""#, ["$.forward: expected an object, got string"]),
            ("{}", [#"$.forward.listen: required key "listen" is missing"#]),
            (#"{ "listen": 8181 }"#, ["$.forward.listen: expected a string, got number"]),
            (#"{ "listen": "8181" }"#,
             [#"$.forward.listen: missing port in "8181"; expected "host:port" like "127.0.0.1:8180" or "[::1]:8180""#]),
            (#"{ "listen": "127.0.0.1:70000" }"#, [#"$.forward.listen: port 70000 in "127.0.0.1:70000" is out of range (0-65535)"#]),
            (#"{ "listen": "::1:8181" }"#, [#"$.forward.listen: write an IPv6 address in brackets, like "[::1]:8180""#]),
            (#"{ "listen": "127.0.0.1:8181", "tunnelOthers": "yes" }"#,
             ["$.forward.tunnelOthers: expected a boolean (true or false), got string"]),
            (#"{ "listen": "127.0.0.1:8181", "connectPorts": [] }"#,
             ["$.forward.connectPorts: must list at least one port; leave it out for [443]"]),
            (#"{ "listen": "127.0.0.1:8181", "connectPorts": 443 }"#, ["$.forward.connectPorts: expected an array, got number"]),
            (#"{ "listen": "127.0.0.1:8181", "connectPorts": [443, 8443, 443] }"#,
             ["$.forward.connectPorts[2]: port 443 is already listed at connectPorts[0]"]),
            (#"{ "listen": "127.0.0.1:8181", "connectPorts": [70000, 0, -1] }"#, [
                "$.forward.connectPorts[0]: must be a port 1-65535, got 70000",
                "$.forward.connectPorts[1]: must be a port 1-65535, got 0",
                "$.forward.connectPorts[2]: must be a port 1-65535, got -1",
            ]),
            (#"{ "listen": "127.0.0.1:8181", "connectPorts": ["443", 443.5] }"#, [
                "$.forward.connectPorts[0]: expected an integer, got string",
                "$.forward.connectPorts[1]: expected an integer, got 443.5",
            ]),
            (#"{ "listen": "127.0.0.1:8181", "caDirectory": "forward-ca" }"#,
             [#"$.forward.caDirectory: must be an absolute path, got "forward-ca""#]),
            (#"{ "listen": "127.0.0.1:8181", "caDirectory": "" }"#, ["$.forward.caDirectory: must not be empty"]),
            (#"{ "listen": "127.0.0.1:8181", "caDirectory": ["/ca"] }"#, ["$.forward.caDirectory: expected a string, got array"]),
            (#"{ "listen": "127.0.0.1:8181", "proxyAuthFile": true }"#, ["$.forward.proxyAuthFile: expected a string, got boolean"]),
            (#"{ "listen": "127.0.0.1:8181", "tunnelOther": false }"#,
             [#"$.forward.tunnelOther: unknown key "tunnelOther" (did you mean "tunnelOthers"?)"#]),
            (#"{ "listen": "127.0.0.1:8181", "hosts": ["api.test"] }"#, [#"$.forward.hosts: unknown key "hosts""#]),
        ]
        for (forward, expected) in table {
            XCTAssertEqual(errors(forward: forward), expected, forward)
        }
    }

    func testANonLoopbackListenerWithoutAnAuthFileIsRefused() {
        for listen in ["0.0.0.0:8181", "[::]:8181", "192.168.1.20:8181", "relay.example.com:8181"] {
            let address = HostPort(parsing: listen)!
            XCTAssertEqual(errors(forward: #"{ "listen": "\#(listen)" }"#), [
                "$.forward.proxyAuthFile: required when forward.listen is not a loopback address (\(address)): without "
                    + "Proxy-Authorization, any host that reaches the port could send requests out with the identities' tokens",
            ], listen)
        }
    }

    func testAnAddressOfAnotherListenerIsRefused() throws {
        for name in ["c.pem", "k.pem"] { try writeFile(name, "pem") }
        try writeFile("proxy-auth", "ci:token\n")
        let tls = #""listenTls": { "address": "127.0.0.1:8443", "certFile": "c.pem", "keyFile": "k.pem" }"#
        let table: [(listen: String, extra: String, expected: [String])] = [
            ("127.0.0.1:8180", "", ["127.0.0.1:8180 takes the port of listen 127.0.0.1:8180"]),
            ("127.0.0.1:9180", "", ["127.0.0.1:9180 takes the port of admin 127.0.0.1:9180"]),
            ("127.0.0.1:8443", tls, ["127.0.0.1:8443 takes the port of listenTls.address 127.0.0.1:8443"]),
            ("LOCALHOST:7000", #""listen": "localhost:7000""#, ["LOCALHOST:7000 takes the port of listen localhost:7000"]),
            ("0.0.0.0:8180", "", ["0.0.0.0:8180 takes the port of listen 127.0.0.1:8180"]),
            ("127.0.0.1:7000", #""listen": "[::]:7000", "admin": "[::]:7000""#,
             ["127.0.0.1:7000 takes the port of listen [::]:7000", "127.0.0.1:7000 takes the port of admin [::]:7000"]),
        ]
        for (listen, extra, expected) in table {
            let auth = HostSyntax.isLoopback(HostPort(parsing: listen)!.host) ? "" : #", "proxyAuthFile": "proxy-auth""#
            XCTAssertEqual(errors(forward: #"{ "listen": "\#(listen)"\#(auth) }"#, extra),
                           expected.map { "$.forward.listen: \($0); give the forward proxy a port of its own" }, listen)
        }
        // The same port on another loopback address, or with the admin listener off, is no collision.
        XCTAssertNotNil(try decode(forward: #"{ "listen": "127.0.0.2:8180" }"#).forward)
        XCTAssertNotNil(try decode(forward: #"{ "listen": "127.0.0.1:9180" }"#, #""admin": null"#).forward)
    }

    // MARK: - proxyAuthFile

    func testAnAuthFileThatCannotBeUsedIsRefusedNamingTheFileAndNeverItsContent() throws {
        let path = directory.path
        try writeFile("malformed", "alice:s3cret-one\nbob-without-password\n")
        try writeFile("empty-password", "alice:\n")
        try writeFile("comments-only", "# nobody yet\n\n")
        try writeFile("group-readable", "alice:s3cret-one\n", mode: 0o640)
        try writeFile("world-readable", "alice:s3cret-one\n", mode: 0o604)
        try writeFile("group-writable", "alice:s3cret-one\n", mode: 0o620)
        try directory.write([0x61, 0x3a, 0xff, 0x0a], to: "latin1")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path + "/latin1")
        try FileManager.default.createDirectory(atPath: path + "/a-directory", withIntermediateDirectories: false)
        let table: [(file: String, expected: String)] = [
            ("missing", "no such file: \(path)/missing"),
            ("a-directory", "is a directory, not a file: \(path)/a-directory"),
            ("malformed", #"not a list of "user:password" lines (line 2 is not "user:password"): \#(path)/malformed"#),
            ("empty-password", #"not a list of "user:password" lines (line 1 has an empty password): \#(path)/empty-password"#),
            ("comments-only", #"not a list of "user:password" lines (it names no "user:password"): \#(path)/comments-only"#),
            ("latin1", "file is not UTF-8 text: \(path)/latin1"),
            ("group-readable", "holds passwords, so group and others must have no access to it (mode 640; chmod 600): \(path)/group-readable"),
            ("world-readable", "holds passwords, so group and others must have no access to it (mode 604; chmod 600): \(path)/world-readable"),
            ("group-writable", "holds passwords, so group and others must have no access to it (mode 620; chmod 600): \(path)/group-writable"),
        ]
        for (file, expected) in table {
            let found = errors(forward: #"{ "listen": "127.0.0.1:8181", "proxyAuthFile": "\#(file)" }"#)
            XCTAssertEqual(found, ["$.forward.proxyAuthFile: " + expected], file)
            XCTAssertFalse(found.joined().contains("s3cret"), file)
        }
    }

    func testTheModeIsTheOneOfTheFileASymlinkLeadsTo() throws {
        // A Kubernetes Secret's file is a symlink (0777 itself) to the file kubelet wrote.
        try writeFile("proxy-auth-0600", "alice:secret\n")
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/proxy-auth", withDestinationPath: "proxy-auth-0600")
        XCTAssertEqual(basic("alice:secret"), true)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory.path + "/proxy-auth-0600")
        XCTAssertEqual(errors(forward: #"{ "listen": "127.0.0.1:8181", "proxyAuthFile": "proxy-auth" }"#).map { $0.prefix(50) },
                       ["$.forward.proxyAuthFile: holds passwords, so group"])
    }

    func testTheAuthFileIsWatchedAndReadAgainAtEachLoad() throws {
        try writeFile("proxy-auth", "alice:first\n")
        let forward = #"{ "listen": "127.0.0.1:8181", "proxyAuthFile": "proxy-auth" }"#
        let before = try decode(forward: forward)
        XCTAssertEqual(before.watchedFiles.map(\.description), ["$.forward.proxyAuthFile \(directory.path)/proxy-auth"])
        XCTAssertEqual(basic("alice:first"), true)
        try writeFile("proxy-auth", "alice:second\n")
        let after = try decode(forward: forward)
        XCTAssertNotEqual(before.forward?.credentials, after.forward?.credentials)
        XCTAssertEqual(basic("alice:first"), false)
        XCTAssertEqual(basic("alice:second"), true)
        // New passwords are a reload's to apply; nothing about them takes a restart.
        XCTAssertEqual(before.restartOnlyChanges(to: after), [])
    }

    // MARK: - Reload

    func testTheListenAddressTakesARestartAndTheOtherKeysDoNot() throws {
        try writeFile("proxy-auth", "alice:first\n")
        let old = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#)
        let changed = try decode(forward: """
            { "listen": "127.0.0.1:8181", "tunnelOthers": false, "connectPorts": [8443], "proxyAuthFile": "proxy-auth" }
            """)
        XCTAssertEqual(old.restartOnlyChanges(to: changed), [])
        XCTAssertEqual(old.restartOnlyChanges(to: try decode(forward: #"{ "listen": "127.0.0.1:8182" }"#)),
                       ["$.forward.listen: changed from 127.0.0.1:8181 to 127.0.0.1:8182; this takes a restart, not a reload"])
        XCTAssertEqual(old.restartOnlyChanges(to: try decodeConfig("{}")),
                       ["$.forward.listen: changed from 127.0.0.1:8181 to none; this takes a restart, not a reload"])
        XCTAssertEqual(try decodeConfig("{}").restartOnlyChanges(to: old),
                       ["$.forward.listen: changed from none to 127.0.0.1:8181; this takes a restart, not a reload"])
    }

    // MARK: - Warnings

    private let identity = #""identities": { "api": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" } }"#

    func testAForwardProxyWithNoRouteNamingAHostIsWarnedOf() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#,
                                #"\#(identity), "routes": [ { "upstream": "https://api.test", "identity": "api" } ]"#)
        XCTAssertEqual(config.forwardProxyWarnings, ["$.forward: the forward proxy intercepts nothing: no route names match.host"])
    }

    func testARouteWithAnIdentityMatchingAnIPAddressIsWarnedOf() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#, #"""
            \#(identity), "routes": [
              { "match": { "host": "api.test" }, "upstream": "https://api.test", "identity": "api" },
              { "name": "by-address", "match": { "host": "10.0.0.5" }, "upstream": "https://10.0.0.5", "identity": "api" },
              { "match": { "host": "[fd00::5]" }, "upstream": "https://[fd00::5]", "identity": "api" },
              { "match": { "host": "10.0.0.6" }, "upstream": "https://10.0.0.6" } ]
            """#)
        XCTAssertEqual(config.interceptedHosts, [.exact("api.test")])
        XCTAssertEqual(config.forwardProxyWarnings, [
            "$.routes[1].match.host: 10.0.0.5 is not intercepted by the forward proxy: the CA signs for names only "
                + "(route by-address is served on the other listeners)",
            "$.routes[2].match.host: [fd00::5] is not intercepted by the forward proxy: the CA signs for names only "
                + "(route routes[2] is served on the other listeners)",
        ])
    }

    /// A wildcard over an IPv4 address is no name the CA can sign for (LocalCA refuses it): not
    /// intercepted, and warned of like an address.
    func testAWildcardOverAnIPv4AddressIsNotInterceptedAndWarnedOf() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#, #"""
            \#(identity), "routes": [
              { "match": { "host": "api.test" }, "upstream": "https://api.test", "identity": "api" },
              { "match": { "host": "*.10.0.0.1" }, "upstream": "https://10.0.0.1", "identity": "api" } ]
            """#)
        XCTAssertEqual(config.interceptedHosts, [.exact("api.test")])
        XCTAssertEqual(config.forwardProxyWarnings, [
            "$.routes[1].match.host: *.10.0.0.1 is not intercepted by the forward proxy: the CA signs for names only "
                + "(route routes[1] is served on the other listeners)",
        ])
    }

    func testAWildcardOverAOneLabelSuffixIsWarnedOf() throws {
        let config = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#, #"""
            \#(identity), "routes": [
              { "match": { "host": "*.example.com" }, "upstream": "https://api.test", "identity": "api" },
              { "name": "everything", "match": { "host": "*.com" }, "upstream": "https://api.test" } ]
            """#)
        XCTAssertEqual(config.interceptedHosts, [.wildcard(suffix: "com"), .wildcard(suffix: "example.com")])
        XCTAssertEqual(config.forwardProxyWarnings, [
            "$.routes[1].match.host: *.com lets the forward proxy's CA sign for every name under com (route everything); "
                + "name the hosts, or a longer suffix",
        ])
    }

    func testWithoutForwardOrWithRoutesNamingHostsThereIsNoWarning() throws {
        let routes = #"\#(identity), "routes": [ { "match": { "host": "10.0.0.5" }, "upstream": "https://10.0.0.5", "identity": "api" } ]"#
        XCTAssertEqual(try decodeConfig("{ \(routes) }").forwardProxyWarnings, [])
        let named = try decode(forward: #"{ "listen": "127.0.0.1:8181" }"#, #"""
            \#(identity), "routes": [ { "match": { "host": "*.api.test" }, "upstream": "https://api.test", "identity": "api" } ]
            """#)
        XCTAssertEqual(named.forwardProxyWarnings, [])
    }
}
