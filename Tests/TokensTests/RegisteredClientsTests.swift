import Crypto
import Endpoints
import EventLoop
import FileTestSupport
import Foundation
import Logging
import LoopTestSupport
import OAuth2
import SafeText
import TokenStore
@testable import Tokens
import XCTest

/// The token loop's side of the kept registrations (file store only: Redis is the integration
/// tests'), and how an RFC 7592 deletion's answer is told.
final class RegisteredClientsTests: XCTestCase {
    private var scratch: TemporaryDirectory!
    private var directory: String { scratch.path + "/store" }
    private var test: LeakCheckedLoop!
    private let key = RegistrationKey(identity: "auto-api", issuer: "https://as.example.com", redirectUri: "http://127.0.0.1:1/cb",
                                      clientAuth: .automatic)
    private let client = RegisteredClient(issuer: "https://as.example.com", clientId: "id-1", clientSecret: Secret("secret-1"),
                                          registrationAccessToken: Secret("rat-1"),
                                          registrationClientUri: HTTPURL(scheme: .https, host: "as.example.com", path: "/register/id-1"),
                                          tokenEndpointAuthMethod: "client_secret_basic", redirectUri: "http://127.0.0.1:1/cb",
                                          registeredAt: 1_800_000_000)

    override func setUpWithError() throws {
        scratch = try TemporaryDirectory()
        test = try LeakCheckedLoop()
    }

    override func tearDown() {
        test.closeAndCheckForLeaks()
        scratch.remove()
    }

    private func clients() throws -> RegisteredClients {
        let store = try TokenStore(path: directory, key: SymmetricKey([UInt8](repeating: 3, count: 32)))
        return RegisteredClients(persistence: TokenPersistence(store: store, loop: test.loop, logger: Logger(label: "test")),
                                 logger: Logger(label: "test"))
    }

    private func read(_ clients: RegisteredClients, _ key: RegistrationKey) -> RegisteredClient?? {
        var found: RegisteredClient??
        clients.read(key) { found = .some($0) }
        return found
    }

    func testAClientKeptIsReadByTheNextProcessAndRemoved() throws {
        let first = try clients()
        XCTAssertTrue(first.hasStore)
        XCTAssertEqual(read(first, key), .some(nil))
        first.write(client, for: key)
        XCTAssertEqual(read(try clients(), key), .some(client))
        XCTAssertEqual(try clients().readKept(identity: "auto-api"), client)
        var other = key
        other.clientAuth = .privateKeyJWT
        XCTAssertEqual(read(try clients(), other), .some(nil))
        // `--forget-client` before the identity resolved finds it whatever its key.
        XCTAssertEqual(try clients().readKept(identity: "auto-api"), client)
        try clients().remove(identity: "auto-api")
        XCTAssertEqual(read(try clients(), key), .some(nil))
        XCTAssertNil(try clients().readKept(identity: "auto-api"))
    }

    func testAClientDroppedIsRemovedOnlyWhileTheStoreStillKeepsIt() throws {
        try clients().write(client, for: key)
        // Another process registered anew meanwhile: its client stays.
        var newer = client
        newer.clientId = "id-2"
        try clients().write(newer, for: key)
        try clients().remove(identity: "auto-api", clientId: "id-1")
        XCTAssertEqual(try clients().readKept(identity: "auto-api"), newer)
        try clients().remove(identity: "auto-api", clientId: "id-2")
        XCTAssertNil(try clients().readKept(identity: "auto-api"))
        try clients().remove(identity: "auto-api", clientId: "id-2")
    }

    func testADamagedRecordReadsAsNoneAndIsMovedAside() throws {
        try clients().write(client, for: key)
        let file = directory + "/client-auto-api.registration"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        XCTAssertEqual(read(try clients(), key), .some(nil))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        XCTAssertEqual(names.filter { $0.hasPrefix("client-auto-api.registration.corrupt-") }.count, 1, "\(names)")
    }

    func testWithoutAStoreNothingIsKept() {
        let clients = RegisteredClients(persistence: nil, logger: Logger(label: "test"))
        XCTAssertFalse(clients.hasStore)
        clients.write(client, for: key)
        XCTAssertEqual(read(clients, key), .some(nil))
        XCTAssertNil(clients.readKept(identity: "auto-api"))
    }

    func testADeletionsAnswerIsTold() {
        func deletion(_ status: Int) -> ClientDeletion { ClientDeletion(.success(TokenEndpointReply(status: status))) }
        XCTAssertEqual(deletion(204), .deleted)
        XCTAssertEqual(deletion(200), .deleted)
        XCTAssertEqual(deletion(401), .alreadyGone(status: 401))
        XCTAssertEqual(deletion(404), .alreadyGone(status: 404))
        XCTAssertEqual(deletion(403), .failed("the registration endpoint answered 403"))
        XCTAssertEqual(deletion(500), .failed("the registration endpoint answered 500"))
        XCTAssertEqual(ClientDeletion(.failure(.unreachable(reason: "connection refused"))),
                       .failed("\(TokenEndpointError.unreachable(reason: "connection refused"))"))
        XCTAssertEqual(deletion(404).description, "the authorization server answered 404: the registration is gone there already")
    }
}
