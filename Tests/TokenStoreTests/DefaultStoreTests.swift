import FileTestSupport
import Foundation
import TokenStore
import XCTest

/// The store a developer gets without configuring one.
final class DefaultStoreTests: XCTestCase {
    func testItLivesInTheStateDirectory() {
        XCTAssertEqual(DefaultStore.directory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]), "/s/oauth-relay")
        XCTAssertEqual(DefaultStore.directory(environment: ["HOME": "/h"]), "/h/.local/state/oauth-relay")
        XCTAssertEqual(DefaultStore.directory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]), "/h/.local/state/oauth-relay",
                       "XDG: a relative path is ignored")
        XCTAssertNil(DefaultStore.directory(environment: [:]))
    }

    func testTheFirstUseMakesAPrivateKeyThatLaterUsesKeep() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let base = directory.path + "/state/oauth-relay"
        let first = try DefaultStore.store(in: base)
        let key = try Data(contentsOf: URL(fileURLWithPath: base + "/store.key"))
        XCTAssertEqual(Data(base64Encoded: String(decoding: key, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))?.count, 32)
        let attributes = try FileManager.default.attributesOfItem(atPath: base + "/store.key")
        XCTAssertEqual((attributes[.posixPermissions] as! NSNumber).intValue & 0o777, 0o600)
        XCTAssertEqual(first.path, base + "/tokens")
        _ = try DefaultStore.store(in: base)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: base + "/store.key")), key, "the key is made once")
    }

    func testAKeyFileOthersMayReadIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try DefaultStore.store(in: directory.path)
        chmod(directory.path + "/store.key", 0o644)
        XCTAssertThrowsError(try DefaultStore.store(in: directory.path)) { error in
            XCTAssertTrue("\(error)".contains("chmod 600"), "\(error)")
        }
    }
}
