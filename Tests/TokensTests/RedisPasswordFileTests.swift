import FileTestSupport
import Foundation
import Logging
import RedisProtocol
import SafeText
import WatchedFiles
@testable import Tokens
import XCTest

/// `store.passwordFile` read again at each connection: the password it holds now, trimmed; the
/// last good one while it cannot be read, with one warning per outage; no message holds it.
final class RedisPasswordFileTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    func testTheFilesContentTrimmedOfItsTrailingNewline() throws {
        let path = try directory.write("password", "rotated-password\n")
        XCTAssertEqual(RedisPasswordFile.read(path), .success(Secret("rotated-password")))
    }

    func testWhyAFileGivesNoPassword() throws {
        XCTAssertEqual(RedisPasswordFile.read(directory.path + "/missing"), .failure(.file(.missing)))
        XCTAssertEqual(RedisPasswordFile.read(try directory.write("blank", " \n\n")), .failure(.empty))
        try directory.write([0xff, 0xfe], to: "binary")
        XCTAssertEqual(RedisPasswordFile.read(directory.path + "/binary"), .failure(.notUTF8))
        let big = try directory.write("big", String(repeating: "x", count: FileIdentity.credentialSizeLimit + 1))
        XCTAssertEqual(RedisPasswordFile.read(big), .failure(.file(.tooLarge(limit: FileIdentity.credentialSizeLimit))))
    }

    func testTheLastGoodPasswordStaysWhileTheFileCannotBeReadWithOneWarning() {
        let file = RedisPasswordFile(path: "/run/secrets/redis", loaded: Secret("loaded-password"))
        XCTAssertEqual(file.take(.failure(.file(.missing))), .unusable(reason: "no such file"))
        XCTAssertEqual(file.password, Secret("loaded-password"))
        XCTAssertEqual(file.take(.failure(.empty)), .none, "one warning per outage")
        XCTAssertEqual(file.password, Secret("loaded-password"))
        XCTAssertEqual(file.take(.success(Secret("new-password"))), .usableAgain)
        XCTAssertEqual(file.password, Secret("new-password"))
        XCTAssertEqual(file.take(.success(Secret("newer-password"))), .none)
        XCTAssertEqual(file.password, Secret("newer-password"))
    }

    func testTheServersToConnectToHoldTheFilesPasswordNow() throws {
        let path = try directory.write("password", "first-password\n")
        let file = RedisPasswordFile(path: path, loaded: Secret("loaded-password"))
        let logger = Logger(label: "test")
        let configured = RedisTopology.server(RedisEndpoint(host: "127.0.0.1", user: "relay", password: Secret("loaded-password")))
        XCTAssertEqual(file.topology(configured, logger: logger).password, Secret("first-password"))
        try directory.write("password", "second-password")
        let rotated = file.topology(configured, logger: logger)
        XCTAssertEqual(rotated.password, Secret("second-password"))
        XCTAssertEqual(rotated.user, "relay")
        try FileManager.default.removeItem(atPath: path)
        XCTAssertEqual(file.topology(configured, logger: logger).password, Secret("second-password"))
    }

    func testEverySeedOfAClusterTakesThePassword() throws {
        let path = try directory.write("password", "cluster-password")
        let file = RedisPasswordFile(path: path, loaded: Secret("loaded-password"))
        let seeds = RedisClusterSeeds(seeds: [RedisEndpoint(host: "10.0.0.7", port: 7000, user: "relay", password: Secret("loaded-password")),
                                              RedisEndpoint(host: "10.0.0.8", port: 7001, user: "relay", password: Secret("loaded-password"))])
        guard case .cluster(let taken) = file.topology(.cluster(seeds), logger: Logger(label: "test")) else { return XCTFail("not a cluster") }
        XCTAssertEqual(taken.seeds.map(\.password), [Secret("cluster-password"), Secret("cluster-password")])
        XCTAssertEqual(taken.node(host: "10.0.0.9", port: 7002).password, Secret("cluster-password"), "a node the slot map names")
    }
}
