import Config
import Foundation
import OAuth2
import XCTest

/// `store`: a directory and a 32-byte key (inline, `${ENV}` or a file), errors with JSON paths
/// that never quote the key.
final class StoreConfigTests: XCTestCase {
    private let key = Data([UInt8](repeating: 7, count: 32)).base64EncodedString()

    func testWithoutStoreTokensStayInMemory() throws {
        XCTAssertNil(try decodeConfig("{}").store)
    }

    func testAPathAndAnInlineOrEnvironmentKey() throws {
        let config = try decodeConfig(#"{ "store": { "path": "state/tokens", "key": "${STORE_KEY}" } }"#,
                                      environment: ["STORE_KEY": key], baseDirectory: "/etc/relay")
        XCTAssertEqual(config.store, StoreConfig(path: "/etc/relay/state/tokens", key: Secret(key)))
    }

    func testAKeyFileIsReadAndTrimmed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Data((key + "\n").utf8).write(to: URL(fileURLWithPath: directory.path + "/store.key"))
        let config = try decodeConfig(#"{ "store": { "path": "/var/lib/relay", "keyFile": "store.key" } }"#, baseDirectory: directory.path)
        XCTAssertEqual(config.store?.key, Secret(key))
    }

    func testAKeyOfAnotherLengthIsAnErrorThatDoesNotQuoteIt() {
        let short = Data([UInt8](repeating: 9, count: 16)).base64EncodedString()
        let errors = describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(short)" } }"#))
        XCTAssertEqual(errors, ["$.store.key: the key decodes to 16 bytes, not 32 (create one with `openssl rand -base64 32`)"])
        XCTAssertFalse(errors.joined().contains(short))
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "not*base64" } }"#)),
                       ["$.store.key: the key is not base64 (create one with `openssl rand -base64 32`)"])
    }

    func testPathAndKeyAreRequiredAndKeyIsGivenOnce() {
        XCTAssertEqual(describe(configErrors(#"{ "store": { "key": "\#(key)" } }"#)), ["$.store.path: required key \"path\" is missing"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x" } }"#)).map { $0.prefix(25) }, ["$.store.key: required: \"k"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "keyFile": "k" } }"#)),
                       ["$.store.keyFile: set either key or keyFile, not both"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "redis": "r" } }"#)).count, 1)
    }

    func testChangingTheStoreTakesARestartAndTheMessageHoldsNoKey() throws {
        let other = Data([UInt8](repeating: 8, count: 32)).base64EncodedString()
        func config(_ path: String, _ key: String) throws -> RelayConfig {
            try decodeConfig(#"{ "store": { "path": "\#(path)", "key": "\#(key)" } }"#)
        }
        XCTAssertEqual(try config("/a", key).restartOnlyChanges(to: try config("/a", key)), [])
        XCTAssertEqual(try config("/a", key).restartOnlyChanges(to: try config("/b", key)),
                       ["$.store.path: changed from /a to /b; this takes a restart, not a reload"])
        let changes = try config("/a", key).restartOnlyChanges(to: try config("/a", other))
        XCTAssertEqual(changes, ["$.store.key: changed; this takes a restart, not a reload"])
        XCTAssertEqual(try decodeConfig("{}").restartOnlyChanges(to: try config("/a", key)),
                       ["$.store.path: changed from none to /a; this takes a restart, not a reload"])
    }
}
