import Crypto
import FileTestSupport
import Foundation
import OAuth2
import TokenStore
import XCTest

/// `oauth-relay check --resolve`'s read of the kept registrations: the disk stays as it was.
final class KeptClientsTests: XCTestCase {
    private let key = SymmetricKey([UInt8](repeating: 7, count: 32))
    private let registration = RegistrationKey(identity: "auto-api", issuer: "https://as.example.com",
                                               redirectUri: "http://127.0.0.1:8080/cb", clientAuth: .automatic)
    private let client = RegisteredClient(issuer: "https://as.example.com", clientId: "client-1", tokenEndpointAuthMethod: "none",
                                          redirectUri: "http://127.0.0.1:8080/cb", registeredAt: 1)
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    func testAMissingStoreIsNotCreated() {
        let path = directory.path + "/store/tokens"
        XCTAssertNil(KeptClients(path: path, key: key))
        XCTAssertNil(KeptClients(defaultStoreIn: directory.path + "/default"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path + "/store"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path + "/default"))
    }

    func testAKeptClientIsReadAndADamagedOneLeftInPlace() throws {
        let path = directory.path + "/store"
        try TokenStore(path: path, key: key).writeClient(client, for: registration)
        let kept = try XCTUnwrap(KeptClients(path: path, key: key))
        XCTAssertEqual(try kept.read(registration), client)
        var other = registration
        other.issuer = "https://other.example.com"
        XCTAssertNil(try kept.read(other))
        let file = path + "/client-auto-api.registration"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let before = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        XCTAssertThrowsError(try kept.read(registration)) { error in
            XCTAssertTrue("\(error)".contains(file), "\(error)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: path).sorted(), before, "nothing renamed aside")
    }
}
