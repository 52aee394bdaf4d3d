@testable import HTTP1
import XCTest

private func classify(_ name: String, lookalikes: Bool = false) -> KnownHeader {
    Array(name.utf8).withUnsafeBytes { KnownHeader(name: $0, lookalikes: lookalikes) }
}

final class KnownHeaderTests: XCTestCase {
    private let known: [(String, KnownHeader)] = [
        ("host", .host), ("connection", .connection), ("keep-alive", .keepAlive), ("proxy-connection", .proxyConnection),
        ("transfer-encoding", .transferEncoding), ("content-length", .contentLength), ("te", .te), ("trailer", .trailer),
        ("upgrade", .upgrade), ("proxy-authorization", .proxyAuthorization), ("expect", .expect), ("via", .via),
        ("x-forwarded-for", .xForwardedFor), ("x-forwarded-proto", .xForwardedProto), ("x-forwarded-host", .xForwardedHost),
        ("authorization", .authorization), ("forwarded", .forwarded), ("cookie", .cookie), ("max-forwards", .maxForwards),
        ("origin", .origin), ("sec-fetch-site", .secFetchSite), ("sec-fetch-mode", .secFetchMode), ("sec-fetch-dest", .secFetchDest),
    ]

    func testEveryKnownNameIsRecognisedInAnyCase() {
        for (name, header) in known {
            XCTAssertEqual(classify(name), header, name)
            XCTAssertEqual(classify(name.uppercased()), header, name.uppercased())
            let mixed = String(name.enumerated().map { $0.offset % 2 == 0 ? Character($0.element.uppercased()) : $0.element })
            XCTAssertEqual(classify(mixed), header, mixed)
        }
    }

    /// The reader classifies only the names the filter lets through: it must let through every
    /// known name in either case (and so its underscored lookalikes, of the same length and first
    /// letter), and it lets through none of a few common names.
    func testTheCandidateFilterLetsEveryKnownNameThrough() {
        for (name, _) in known {
            for spelling in [name, name.uppercased()] {
                let bytes = Array(spelling.utf8)
                XCTAssertTrue(KnownHeader.mayBeKnown(length: bytes.count, first: bytes[0]), spelling)
            }
        }
        for name in ["User-Agent", "Accept", "Server", "Date", "Content-Type", "Cache-Control", "Accept-Encoding", "ETag"] {
            let bytes = Array(name.utf8)
            XCTAssertFalse(KnownHeader.mayBeKnown(length: bytes.count, first: bytes[0]), name)
        }
    }

    func testNamesThatOnlyShareLengthAndFirstLetterAreOther() {
        for name in ["hose", "connexion", "keep_alive!", "tx", "vie", "cookies", "Content-Lengths", "x-forwarded-fox", "", "-", "a",
                     "origins", "orogin", "sec-fetch-user", "sec-fetch-sitx", "sec-fetch-xode", "sec-fetch-", "sec-fetch-dests"] {
            XCTAssertEqual(classify(name, lookalikes: true), .other, name)
        }
    }

    func testUnderscoredLookalikesAreToldOnlyWhenAsked() {
        for name in ["X_Forwarded_For", "content_length", "Transfer_Encoding", "keep_alive", "max_forwards"] {
            XCTAssertEqual(classify(name, lookalikes: true), .underscoredLookalike, name)
            XCTAssertEqual(classify(name), .other, name)
        }
        XCTAssertEqual(classify("x_forwarded_fox", lookalikes: true), .other)
    }

    /// Every byte value at every position of every known name (the short ones are compared a
    /// word at a time too, bytes 4 to 6 included): it matches only when it is the name's own byte
    /// in either case.
    func testOnlyTheSameLetterInEitherCaseMatchesAtAnyPosition() {
        for (spelling, header) in known {
            let name = Array(spelling.utf8)
            for position in name.indices {
                for byte in UInt8.min...UInt8.max {
                    var candidate = name
                    candidate[position] = byte
                    let same = byte == name[position] || (name[position] >= 0x61 && name[position] <= 0x7A && byte == name[position] - 0x20)
                    let classified = candidate.withUnsafeBytes { KnownHeader(name: $0) }
                    XCTAssertEqual(classified == header, same, "\(spelling): byte \(byte) at \(position)")
                }
            }
        }
    }
}
