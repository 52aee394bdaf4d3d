import Endpoints
import Foundation
import OAuth2
import SafeText
import XCTest

/// The client authentication a test names; `makeIdentity` gives it the id and secret.
enum TestClientAuth {
    case basic
    case post
    case publicClient
}

/// An identity for `https://idp.example.com/oauth2/token`, `orders-relay` / `s3cret` with
/// client_secret_basic (a public client without a secret) unless `configure` changes it.
func makeIdentity(_ grant: Grant = .clientCredentials, clientId: String? = "orders-relay", secret: String? = "s3cret",
                  auth: TestClientAuth? = nil, configure: (inout Identity) -> Void = { _ in }) -> Identity {
    let clientAuth: ClientAuth = switch (auth ?? (secret == nil ? .publicClient : .basic), secret) {
    case (.basic, let secret?): .basic(id: clientId ?? "", secret: Secret(secret))
    case (.post, let secret?): .post(id: clientId ?? "", secret: Secret(secret))
    default: clientId.map { .publicClient(id: $0) } ?? .unidentified
    }
    var identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .https, host: "idp.example.com", path: "/oauth2/token"),
                            grant: grant, clientAuth: clientAuth)
    configure(&identity)
    return identity
}

extension TokenRequest {
    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A token endpoint answer with a JSON (or other) body.
func reply(_ status: Int, _ body: String, contentType: String? = "application/json", headers: [(String, String)] = []) -> TokenEndpointReply {
    TokenEndpointReply(status: status, headers: (contentType.map { [("Content-Type", $0)] } ?? []) + headers, body: body)
}

/// Parses `reply` with the standard format, failing the test on an error.
func parsedToken(_ reply: TokenEndpointReply, format: TokenResponseFormat = TokenResponseFormat(), unixTime: Double = 1_700_000_000,
                 file: StaticString = #filePath, line: UInt = #line) throws -> TokenResponse {
    do {
        return try TokenResponse.parse(reply, format: format, unixTime: unixTime)
    } catch {
        XCTFail("expected a token, got \(error)", file: file, line: line)
        throw error
    }
}

/// The error `reply` parses into, failing the test when it parses into a token.
func parseError(_ reply: TokenEndpointReply, secrets: [String] = [], unixTime: Double = 1_700_000_000,
                file: StaticString = #filePath, line: UInt = #line) -> TokenEndpointError? {
    do {
        let token = try TokenResponse.parse(reply, secrets: secrets, unixTime: unixTime)
        XCTFail("expected an error, got \(token)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

/// An unsigned JWT (`alg: none`) with the given claims.
func makeJWT(_ claims: String) -> String {
    func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    return base64URL(#"{"alg":"none"}"#) + "." + base64URL(claims) + ".sig"
}

/// `String(describing:)`, `String(reflecting:)` and `dump` of a value, to check for leaks.
func everyRendering(of value: Any) -> [String] {
    var dumped = ""
    dump(value, to: &dumped)
    return [String(describing: value), String(reflecting: value), "\(value)", dumped]
}

/// A random source that always yields the same value: `fraction` 0 is no jitter, near 1
/// close to the most.
struct FixedRandom: RandomNumberGenerator, Sendable {
    var fraction: Double

    mutating func next() -> UInt64 {
        UInt64(fraction * Double(UInt64(1) << 53)) << 11
    }
}

extension TokenRequest {
    /// The identity's own grant at its configured token URL (every identity in these tests has one).
    static func grant(for identity: Identity) -> TokenRequest? {
        grant(for: identity, at: identity.tokenUrl!)
    }

    static func refresh(for identity: Identity, refreshToken: Secret) -> TokenRequest {
        refresh(for: identity, refreshToken: refreshToken, at: identity.tokenUrl!)
    }
}
