import Config
import FileTestSupport
import OAuth2
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Secrets from the config never show up in descriptions, dumps or error messages.
final class ConfigSecretTests: XCTestCase {
    func testIdentityDescriptionAndDumpNeverContainTheSecrets() throws {
        let json = #"""
        { "identities": { "legacy": { "tokenUrl": "https://idp/token", "grant": "password", "clientId": "legacy",
          "clientSecret": "client-secret-0123456789", "username": "svc", "password": "password-0123456789" } } }
        """#
        let identity = try XCTUnwrap(decodeConfig(json).identities["legacy"])
        var dumped = ""
        dump(identity, to: &dumped)
        for text in [String(describing: identity), String(reflecting: identity), dumped] {
            XCTAssertFalse(text.contains("client-secret-01234"), text)
            XCTAssertFalse(text.contains("password-01234"), text)
        }
        XCTAssertEqual(identity.clientAuth.secret?.value, "client-secret-0123456789")
    }

    func testErrorsAboutASecretNeverContainItsValue() {
        let json = #"""
        { "identities": { "x": { "tokenUrl": "https://idp/token", "grant": "client_credentials", "clientId": "c",
          "clientSecret": "super-secret-value", "clientAuth": "none", "password": "another-secret-value" } } }
        """#
        let text = describe(configErrors(json)).joined(separator: "\n")
        XCTAssertTrue(text.contains("clientAuth is none but a client secret is set"), text)
        XCTAssertTrue(text.contains("$.identities.x.password: password is only used by the password grant"), text)
        XCTAssertFalse(text.contains("super-secret"), text)
        XCTAssertFalse(text.contains("another-secret"), text)
    }

    func testSecretFileIsReadRelativeToTheConfigAndTrimmed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("client-secret", "\n  s3cr3t value \t\r\n")
        let json = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "client-secret" } } }"#
        let identity = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).identities["x"])
        XCTAssertEqual(identity.clientAuth.secret?.value, "s3cr3t value")
    }

    func testEmptySecretFileIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("empty", " \n")
        let json = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "\#(file)" } } }"#
        XCTAssertEqual(describe(configErrors(json)), ["$.identities.x.clientSecretFile: file is empty: \(file)"])
    }

    func testSecretFileNamingADirectoryIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let json = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "." } } }"#
        let errors = configErrors(json, baseDirectory: directory.path)
        XCTAssertEqual(errors.map(\.path), ["$.identities.x.clientSecretFile"])
        XCTAssertTrue(errors.first?.message.hasPrefix("is a directory") ?? false, "\(errors)")
    }

    /// A file the configuration reads is read through one helper: at most 1 MiB, and only a regular
    /// file (a FIFO at a credential path would block the main loop that re-applies the configuration).
    /// Each refusal names the field and the file.
    func testFilesThatAreNotRegularOrTooLargeAreRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let large = try directory.write("large", String(repeating: "s", count: 1024 * 1024 + 1))
        let sized = try directory.write("sized", String(repeating: "s", count: 1024 * 1024))
        let cases: [(String, [String])] = [
            (#""clientSecretFile": "\#(fifo)""#, ["$.identities.x.clientSecretFile: cannot read file (not a regular file): \(fifo)"]),
            (#""clientSecretFile": "\#(large)""#,
             ["$.identities.x.clientSecretFile: cannot read file (larger than 1048576 bytes): \(large)"]),
            (#""clientAuth": "private_key_jwt", "clientKeyFile": "\#(fifo)""#,
             ["$.identities.x.clientKeyFile: cannot read file (not a regular file): \(fifo)"]),
        ]
        for (keys, expected) in cases {
            let json = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", \#(keys) } } }"#
            XCTAssertEqual(describe(configErrors(json)), expected, keys)
        }
        let atTheLimit = #"{ "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "\#(sized)" } } }"#
        XCTAssertEqual(try decodeConfig(atTheLimit).identities["x"]?.clientAuth.secret?.value.count, 1024 * 1024)
        let serviceAccount = #"{ "identities": { "gsa": { "serviceAccountKeyFile": "\#(fifo)", "audience": "https://api" } } }"#
        XCTAssertEqual(describe(configErrors(serviceAccount)).first,
                       "$.identities.gsa.serviceAccountKeyFile: cannot read file (not a regular file): \(fifo)")
    }
}
