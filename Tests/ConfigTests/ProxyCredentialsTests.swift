import Config
import Foundation
import XCTest

/// `ProxyCredentials`: the `user:password` lines of `forward.proxyAuthFile`, and the
/// `Proxy-Authorization` values they admit.
final class ProxyCredentialsTests: XCTestCase {
    private func admits(_ credentials: ProxyCredentials, _ value: String) -> Bool {
        Array(value.utf8).withUnsafeBytes { credentials.admits($0) }
    }

    private func basic(_ pair: String) -> String {
        "Basic " + Data(pair.utf8).base64EncodedString()
    }

    func testLinesEndInLineFeedsOrCarriageReturnLineFeeds() throws {
        for text in ["alice:one\nbob:two\n", "alice:one\r\nbob:two\r\n", "alice:one\r\n\r\nbob:two", "# users\r\nalice:one\nbob:two\r"] {
            let credentials = try ProxyCredentials(parsing: text)
            XCTAssertEqual(credentials.users, ["alice", "bob"], text)
            XCTAssertTrue(admits(credentials, basic("alice:one")), text)
            XCTAssertTrue(admits(credentials, basic("bob:two")), text)
            XCTAssertFalse(admits(credentials, basic("bob:two\r")), text)
        }
    }

    func testTheSchemeIsReadInAnyCaseAndOnlyBasicWithTheWholePairIsAdmitted() throws {
        let credentials = try ProxyCredentials(parsing: "alice:pass word:with colon\n")
        let token = Data("alice:pass word:with colon".utf8).base64EncodedString()
        XCTAssertTrue(admits(credentials, "Basic " + token))
        XCTAssertTrue(admits(credentials, "bASIC   " + token + " "))
        XCTAssertFalse(admits(credentials, "Bearer " + token))
        XCTAssertFalse(admits(credentials, "Basic"))
        XCTAssertFalse(admits(credentials, "Basic " + Data("alice:pass word".utf8).base64EncodedString()))
        XCTAssertFalse(admits(credentials, "Basic " + Data("bob:pass word:with colon".utf8).base64EncodedString()))
    }

    func testMalformedLinesAreNamedByNumberNeverByContent() {
        let table: [(text: String, expected: String)] = [
            ("alice:one\nbob-secret\n", #"line 2 is not "user:password""#),
            (":secret\n", "line 1 has an empty user name"),
            ("# c\nalice:\n", "line 2 has an empty password"),
            ("alice:sec\u{7}ret\n", "line 1 holds a control character"),
            ("alice:one\r\nalice:secret\r\n", #"line 2 names user "alice" a second time"#),
            ("# nobody\n\n", #"it names no "user:password""#),
            ("", #"it names no "user:password""#),
        ]
        for (text, expected) in table {
            XCTAssertThrowsError(try ProxyCredentials(parsing: text), text.debugDescription) { error in
                let description = (error as? ProxyCredentials.FormatError)?.description ?? "\(error)"
                XCTAssertEqual(description, expected, text.debugDescription)
                XCTAssertFalse(description.contains("secret"), text.debugDescription)
            }
        }
    }
}
