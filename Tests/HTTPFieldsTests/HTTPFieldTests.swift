import HTTPFields
import SafeText
import XCTest

/// An owned header field shows no value that may be a credential, however it is printed.
final class HTTPFieldTests: XCTestCase {
    private let secret = "Basic Q0xJRU5UOlNFQ1JFVC0wMTIzNDU2Nzg5"

    private func renderings(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped]
    }

    func testCredentialValuesAreRedactedInEveryRendering() {
        for value in [HTTPField(name: "Authorization", value: secret), HTTPField(name: "X-Api-Key", value: secret)] as [Any] {
            for text in renderings(value) {
                XCTAssertFalse(text.contains("Q0xJRU5U"), text)
            }
        }
        XCTAssertEqual(HTTPField(name: "Authorization", value: secret).description, "Authorization: …Nzg5")
    }

    func testAListOfFieldsIsRedactedToo() {
        let fields = [HTTPField(name: "Accept", value: "application/json"), HTTPField(name: "authorization", value: secret)]
        for text in renderings(fields) {
            XCTAssertFalse(text.contains("Q0xJRU5U"), text)
        }
    }

    func testContentTypeAndAcceptValuesAreShown() {
        XCTAssertEqual(HTTPField(name: "content-type", value: "application/x-www-form-urlencoded").description,
                       "content-type: application/x-www-form-urlencoded")
        XCTAssertEqual(HTTPField(name: "Accept", value: "application/json").description, "Accept: application/json")
    }

    func testRedactedShowsAtMostTheLastFourCharacters() {
        XCTAssertEqual(redacted("0123456789abcdefWXYZ"), "…WXYZ")
        XCTAssertEqual(redacted("0123456789abcde"), "…")
        XCTAssertEqual(redacted(""), "…")
    }

    func testValueNamedIgnoresCaseAndTakesTheFirst() {
        let fields = [HTTPField(name: "Retry-After", value: "5"), HTTPField(name: "retry-after", value: "9")]
        XCTAssertEqual(fields.value(named: "RETRY-AFTER"), "5")
        XCTAssertNil(fields.value(named: "Retry"))
    }
}
