import Crypto
import Endpoints
import JOSE
import JSON
import OAuth2
import XCTest

/// A Google service-account key file read from its content alone: what is kept, and every way the
/// content is refused, each error naming the member and never quoting the key.
final class ServiceAccountKeyTests: XCTestCase {
    private typealias Fixture = ServiceAccountFixture

    func testAKeyFileAsGoogleWritesItIsRead() throws {
        let key = try Fixture.key()
        XCTAssertEqual(key.clientEmail, Fixture.clientEmail)
        XCTAssertEqual(key.keyID, Fixture.keyID)
        XCTAssertEqual(key.tokenURI, HTTPURL(scheme: .https, host: "oauth2.googleapis.com", path: "/token"))
        XCTAssertEqual(key.signingKey, try ClientAssertionKey(privateKey: Fixture.rsa, algorithm: .rs256, keyID: Fixture.keyID))
        XCTAssertEqual(key.signingKey.algorithm, .rs256)
    }

    func testTheSameContentReadTwiceIsTheSameKeyAndAnotherKeyIsNot() throws {
        XCTAssertEqual(try Fixture.key(), try Fixture.key())
        let other = try ServiceAccountKey.parse(json: Fixture.json(key: try PrivateKey.generate(.rsa(bits: 2048))))
        XCTAssertNotEqual(try Fixture.key(), other)
        XCTAssertNotEqual(try Fixture.key(), try Fixture.key(["private_key_id": .string("rotated")]))
    }

    func testAKeyWithoutPrivateKeyIdSignsWithoutKid() throws {
        XCTAssertNil(try Fixture.key(["private_key_id": nil]).keyID)
    }

    func testLoopbackHTTPTokenURIsAreAcceptedForLocalStandIns() throws {
        XCTAssertEqual(try Fixture.key(["token_uri": .string("http://127.0.0.1:8089/token")]).tokenURI.port, 8089)
        XCTAssertEqual(try Fixture.key(["token_uri": .string("http://[::1]/token")]).tokenURI.host, "::1")
        XCTAssertEqual(try Fixture.key(["token_uri": .string("http://localhost:9/t")]).tokenURI.host, "localhost")
    }

    /// Every refusal: the content, and the exact error.
    func testTheRefusalTable() throws {
        let ec = try PrivateKey.generate(.ecP256)
        let table: [(String, String, String)] = [
            ("{", "not JSON", "not a JSON service account key (a JSON syntax error at byte 1)"),
            ("[]", "an array", "not a JSON service account key (not a JSON object)"),
            (Fixture.json(["type": .string("authorized_user")]), "a user's credentials",
             #"not a service account key: its type is "authorized_user", not "service_account""#),
            (Fixture.json(["type": .string("external_account\u{1}\"")]), "an odd type",
             #"not a service account key: its type is "external_account??", not "service_account""#),
            (Fixture.json(["type": nil]), "no type", "the service account key has no type"),
            (Fixture.json(["client_email": nil]), "no client_email", "the service account key has no client_email"),
            (Fixture.json(["client_email": .string("")]), "an empty client_email", "the service account key's client_email is empty"),
            (Fixture.json(["client_email": .integer(7)]), "a numeric client_email",
             "the service account key's client_email is not a string"),
            (Fixture.json(["private_key": nil]), "no private_key", "the service account key has no private_key"),
            (Fixture.json(["private_key": .string("")]), "an empty private_key", "the service account key's private_key is empty"),
            (Fixture.json(["private_key_id": .string("")]), "an empty private_key_id",
             "the service account key's private_key_id is empty"),
            (Fixture.json(["private_key_id": .null]), "a null private_key_id",
             "the service account key's private_key_id is not a string"),
            (Fixture.json(key: ec), "an EC key",
             "the service account key's private_key is not a usable RSA private key (it is an EC P-256 key, not RSA (RS256))"),
            (Fixture.json(["token_uri": nil]), "no token_uri", "the service account key has no token_uri"),
            (Fixture.json(["token_uri": .string("oauth2.googleapis.com/token")]), "a token_uri without scheme",
             "the service account key's token_uri is not an absolute http:// or https:// URL"),
            (Fixture.json(["token_uri": .string("ftp://oauth2.googleapis.com/token")]), "an ftp token_uri",
             "the service account key's token_uri is not an absolute http:// or https:// URL"),
            (Fixture.json(["token_uri": .string("http://oauth2.googleapis.com/token?k=v")]), "plain http to Google",
             "the service account key's token_uri http://oauth2.googleapis.com/token?… is plain http:// to a host that is not loopback, "
                + "so its signed assertions and tokens would cross the network unencrypted"),
        ]
        for (json, what, expected) in table {
            XCTAssertEqual(refusal(json)?.description, expected, what)
        }
    }

    func testAPrivateKeyThatIsNoPEMKeyIsRefusedWithOpenSSLsReasonAndNothingOfTheText() throws {
        let garbled = "-----BEGIN PRIVATE KEY-----\nTm90QUtleUF0QWxsSnVzdFNvbWVUZXh0\n-----END PRIVATE KEY-----\n"
        let message = try XCTUnwrap(refusal(Fixture.json(["private_key": .string(garbled)]))?.description)
        XCTAssertTrue(message.hasPrefix("the service account key's private_key is not a usable RSA private key (the key could not be read: "),
                      message)
        XCTAssertFalse(message.contains("Tm90QUtl"), message)
        let publicOnly = try Fixture.rsa.publicKey.pemRepresentation()
        let publicMessage = try XCTUnwrap(refusal(Fixture.json(["private_key": .string(publicOnly)]))?.description)
        XCTAssertTrue(publicMessage.contains("no unencrypted private key"), publicMessage)
    }

    func testNoErrorOrDescriptionShowsTheKey() throws {
        let texts = [
            try Fixture.key().description, String(reflecting: try Fixture.key()),
            refusal(Fixture.json(["type": .string("authorized_user")]))?.description ?? "",
            refusal(Fixture.json(["token_uri": .string("ftp://x")]))?.description ?? "",
            refusal(Fixture.json(["client_email": .string("")]))?.description ?? "",
        ]
        for text in texts {
            for line in Fixture.pemBodyLines { XCTAssertFalse(text.contains(line), text) }
        }
        XCTAssertEqual(try Fixture.key().description,
                       "service account \(Fixture.clientEmail) (RS256 key \"\(Fixture.keyID)\")")
    }

    private func refusal(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> ServiceAccountKeyError? {
        do {
            let key = try ServiceAccountKey.parse(json: json)
            XCTFail("expected a refusal, read \(key)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }
}
