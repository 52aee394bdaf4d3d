import Crypto
import JOSE
import JSON
import OAuth2
import XCTest

/// Google service-account key files for the tests, as the Cloud console writes them.
enum ServiceAccountFixture {
    static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    static let clientEmail = "relay@orders-project.iam.gserviceaccount.com"
    static let keyID = "0123456789abcdef0123456789abcdef01234567"
    static let tokenURI = "https://oauth2.googleapis.com/token"

    /// The members of a key file for `rsa`, with `changes` applied (nil removes a member).
    static func members(_ changes: [String: JSONValue?] = [:], key: PrivateKey = rsa) -> [JSONMember] {
        var members: [JSONMember] = [
            JSONMember("type", .string("service_account")),
            JSONMember("project_id", .string("orders-project")),
            JSONMember("private_key_id", .string(keyID)),
            JSONMember("private_key", .string(try! key.pemRepresentation())),
            JSONMember("client_email", .string(clientEmail)),
            JSONMember("client_id", .string("113258942105700140798")),
            JSONMember("auth_uri", .string("https://accounts.google.com/o/oauth2/auth")),
            JSONMember("token_uri", .string(tokenURI)),
            JSONMember("auth_provider_x509_cert_url", .string("https://www.googleapis.com/oauth2/v1/certs")),
            JSONMember("client_x509_cert_url", .string("https://www.googleapis.com/robot/v1/metadata/x509/relay")),
            JSONMember("universe_domain", .string("googleapis.com")),
        ]
        for (name, value) in changes {
            if let index = members.firstIndex(where: { $0.name == name }) {
                if let value { members[index].value = value } else { members.remove(at: index) }
            } else if let value {
                members.append(JSONMember(name, value))
            }
        }
        return members
    }

    /// A key file's text.
    static func json(_ changes: [String: JSONValue?] = [:], key: PrivateKey = rsa) -> String {
        JSONValue.object(members(changes, key: key)).serialized
    }

    static func key(_ changes: [String: JSONValue?] = [:]) throws -> ServiceAccountKey {
        try ServiceAccountKey.parse(json: json(changes))
    }

    /// The base64 body lines of `rsa`'s PEM: what no error or description may show.
    static var pemBodyLines: [String] {
        try! rsa.pemRepresentation().split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
    }
}

/// The JSON members of a compact JWS's header and payload, as sent (no library reading them first).
func jwtParts(_ compact: String, file: StaticString = #filePath, line: UInt = #line) throws -> (header: [String: JSONValue], claims: [String: JSONValue]) {
    let segments = compact.split(separator: ".", omittingEmptySubsequences: false)
    XCTAssertEqual(segments.count, 3, file: file, line: line)
    func object(_ segment: Substring) throws -> [String: JSONValue] {
        try XCTUnwrap(JSONValue(parsing: XCTUnwrap(Base64URL.decode(segment))).dictionary, file: file, line: line)
    }
    return (try object(segments[0]), try object(segments[1]))
}
