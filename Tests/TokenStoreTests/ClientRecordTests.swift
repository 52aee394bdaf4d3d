import Crypto
import Endpoints
import FileTestSupport
import Foundation
import OAuth2
import SafeText
import TokenStore
import XCTest

final class ClientRecordTests: XCTestCase {
    let key = SymmetricKey([UInt8](repeating: 7, count: 32))
    let registration = RegistrationKey(identity: "auto-api.example.com", issuer: "https://as.example.com",
                                       redirectUri: "http://127.0.0.1:8080/login/callback", clientAuth: .automatic)
    let client = RegisteredClient(issuer: "https://as.example.com", clientId: "client-id-1234",
                                  clientSecret: Secret("client-secret-value-5678"), clientSecretExpiresAt: 1_900_000_000,
                                  registrationAccessToken: Secret("registration-access-token-9012"),
                                  registrationClientUri: HTTPURL(scheme: .https, host: "as.example.com", path: "/register/client-id-1234"),
                                  tokenEndpointAuthMethod: "client_secret_basic", privateKeyPEM: Secret("-----BEGIN PRIVATE KEY-----x"),
                                  redirectUri: "http://127.0.0.1:8080/login/callback", registeredAt: 1_800_000_000.5)
    var directory: TemporaryDirectory!
    var storePath: String { directory.path + "/store" }

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    private func ring(_ key: SymmetricKey) -> StoreKeyRing { StoreKeyRing(key) }

    // MARK: - Codec

    func testEveryKindOfClientRoundTrips() throws {
        let kinds = [
            client,
            RegisteredClient(issuer: "https://as.example.com", clientId: "public", tokenEndpointAuthMethod: "none", registeredAt: 0),
            RegisteredClient(issuer: "", clientId: "", clientSecret: Secret(""), clientSecretExpiresAt: 0, tokenEndpointAuthMethod: "",
                             redirectUri: "", registeredAt: -1),
        ]
        for kind in kinds {
            let bytes = try ClientRecord.encode(kind, for: registration, key: key)
            XCTAssertEqual(try ClientRecord.decode(bytes, for: registration, keys: ring(key)), kind)
        }
    }

    func testTheScopeAStepUpLoginLearntRoundTripsAndARecordWithoutItReadsAsBefore() throws {
        var widened = client
        widened.learntScope = "mcp.read mcp.write"
        let bytes = try ClientRecord.encode(widened, for: registration, key: key)
        XCTAssertEqual(try ClientRecord.decode(bytes, for: registration, keys: ring(key)).learntScope, "mcp.read mcp.write")
        // A record without it (as every record before step-ups were kept): the same bytes as before, nil.
        let plain = try ClientRecord.encode(client, for: registration, key: key, nonce: [UInt8](repeating: 1, count: 12))
        XCTAssertEqual(try ClientRecord.decode(plain, for: registration, keys: ring(key)).learntScope, nil)
        XCTAssertEqual(plain.count + 5 + "mcp.read mcp.write".utf8.count, bytes.count)
    }

    func testNoSecretAppearsInTheBytes() throws {
        let text = String(decoding: try ClientRecord.encode(client, for: registration, key: key), as: UTF8.self)
        for secret in ["client-secret-value", "registration-access-token", "BEGIN PRIVATE KEY", "client-id-1234"] {
            XCTAssertFalse(text.contains(secret), secret)
        }
    }

    func testAnotherStoreKeyIsToldApartFromDamage() throws {
        let bytes = try ClientRecord.encode(client, for: registration, key: key)
        let other = SymmetricKey([UInt8](repeating: 8, count: 32))
        XCTAssertThrowsError(try ClientRecord.decode(bytes, for: registration, keys: ring(other))) {
            XCTAssertEqual($0 as? ClientRecord.ReadFailure, .otherKey)
        }
        // A ring that still holds the previous key reads it.
        var rotated = ring(key)
        _ = rotated.rotate(to: other)
        XCTAssertEqual(try ClientRecord.decode(bytes, for: registration, keys: rotated), client)
    }

    func testARecordForAnotherRegistrationKeyIsNotUsed() throws {
        let bytes = try ClientRecord.encode(client, for: registration, key: key)
        var others: [RegistrationKey] = []
        var changed = registration
        changed.identity = "auto-other"
        others.append(changed)
        changed = registration
        changed.issuer = "https://other.example.com"
        others.append(changed)
        changed = registration
        changed.redirectUri = nil
        others.append(changed)
        changed = registration
        changed.redirectUri = ""
        others.append(changed)
        changed = registration
        changed.clientAuth = .privateKeyJWT
        others.append(changed)
        for other in others {
            XCTAssertThrowsError(try ClientRecord.decode(bytes, for: other, keys: ring(key)), "\(other)") {
                XCTAssertEqual($0 as? ClientRecord.ReadFailure, .otherRegistration)
            }
        }
    }

    func testDamageIsCorrupt() throws {
        let bytes = try ClientRecord.encode(client, for: registration, key: key)
        var flipped = bytes
        flipped[flipped.count - 20] ^= 1
        var fieldsFlipped = bytes
        fieldsFlipped[25] ^= 1
        let cases: [([UInt8], String)] = [
            ([], "shorter than a registration record's header"),
            (Array(repeating: 0, count: 80), "not a registration record"),
            (Array("ORRC".utf8) + [2] + Array(bytes[5...]), "registration record format version 2 is not 1"),
            (Array(bytes.prefix(20)), "truncated"),
            (flipped, "does not decrypt (damaged, or not this identity's registration)"),
        ]
        for (damaged, reason) in cases {
            XCTAssertThrowsError(try ClientRecord.decode(damaged, for: registration, keys: ring(key))) {
                XCTAssertEqual($0 as? ClientRecord.ReadFailure, .corrupt(reason))
            }
        }
        // The key's fields in the clear are bound: changing them makes another identity's record.
        XCTAssertThrowsError(try ClientRecord.decode(fieldsFlipped, for: registration, keys: ring(key))) {
            XCTAssertEqual($0 as? ClientRecord.ReadFailure, .otherRegistration)
        }
        // ... which does not open under that identity's name either.
        var renamed = registration
        renamed.identity = "auto,api.example.com"
        XCTAssertThrowsError(try ClientRecord.decode(fieldsFlipped, for: renamed, keys: ring(key))) {
            XCTAssertEqual($0 as? ClientRecord.ReadFailure, .corrupt("does not decrypt (damaged, or not this identity's registration)"))
        }
    }

    func testAPlaintextThatIsNotExactlyARecordDoesNotDecode() throws {
        // Sealed properly, but the plaintext lacks the client id.
        let plaintext: [UInt8] = [1, 0, 0, 0, 1, 0x61]
        let box = try AESGCM.seal(plaintext, key: key, authenticating: ClientRecord.associatedDataForTesting(registration))
        let fields = ClientRecord.keyFieldsForTesting(registration)
        let bytes = Array("ORRC".utf8) + [1] + StoreEntry.keyID(of: key) + [0, 0, 0, UInt8(fields.count)] + fields + box.combined
        XCTAssertThrowsError(try ClientRecord.decode(bytes, for: registration, keys: ring(key))) {
            XCTAssertEqual($0 as? ClientRecord.ReadFailure, .corrupt("decrypts to no registration"))
        }
    }

    // MARK: - File store

    func testAWrittenClientReadsBackFromAFile0600() throws {
        let store = try TokenStore(path: storePath, key: key)
        XCTAssertEqual(try store.readClient(registration), .empty)
        try store.writeClient(client, for: registration)
        XCTAssertEqual(try store.readClient(registration), .found(client))
        XCTAssertEqual(try directory.mode(of: "store/client-auto-api.example.com.registration"), 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath), ["client-auto-api.example.com.registration"])
        // Another process with the same key reads it.
        XCTAssertEqual(try TokenStore(path: storePath, key: key).readClient(registration).client, client)
    }

    func testARecordForAnotherKeyOrRegistrationIsLeftInPlace() throws {
        try TokenStore(path: storePath, key: key).writeClient(client, for: registration)
        let other = try TokenStore(path: storePath, key: SymmetricKey([UInt8](repeating: 9, count: 32)))
        XCTAssertEqual(try other.readClient(registration), .otherKey)
        var changed = registration
        changed.issuer = "https://other.example.com"
        let store = try TokenStore(path: storePath, key: key)
        XCTAssertEqual(try store.readClient(changed), .otherRegistration)
        XCTAssertNil(try store.readClient(changed).client)
        XCTAssertEqual(try store.readClient(registration), .found(client))
    }

    func testACorruptRecordIsMovedAsideWithItsReason() throws {
        let store = try TokenStore(path: storePath, key: key)
        try directory.write(Array("not a record at all, much longer than a header is............".utf8),
                            to: "store/client-auto-api.example.com.registration")
        guard case .movedAside(let reason, let movedTo) = try store.readClient(registration) else { return XCTFail() }
        XCTAssertEqual(reason, "not a registration record")
        XCTAssertTrue(movedTo.hasPrefix(storePath + "/client-auto-api.example.com.registration.corrupt-"), movedTo)
        XCTAssertEqual(try store.readClient(registration), .empty)
    }

    func testRemovingAClientRemovesItsFileOnly() throws {
        let store = try TokenStore(path: storePath, key: key)
        try store.writeClient(client, for: registration)
        try store.write(StoredToken(access: nil, refreshToken: Secret("r")), identity: "auto-api.example.com",
                        fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 1, count: 32)))
        try store.removeClient(identity: "auto-api.example.com")
        XCTAssertEqual(try store.readClient(registration), .empty)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: storePath).filter { !$0.hasSuffix(".lock") },
                       ["identity-auto-api.example.com.token"])
        XCTAssertNoThrow(try store.removeClient(identity: "auto-api.example.com"))
        XCTAssertThrowsError(try store.removeClient(identity: "../x"))
    }
}
