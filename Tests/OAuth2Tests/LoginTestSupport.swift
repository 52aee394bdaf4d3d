import Endpoints
import OAuth2
import XCTest

/// A deterministic random source (SplitMix64), so a login's state, binding, verifier and nonce
/// are the same in every run of a test and differ between seeds.
struct SeededRandom: RandomNumberGenerator, Sendable {
    var state: UInt64

    init(seed: UInt64 = 1) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A public authorization-code client `cli-app` with an OpenID Connect scope.
func interactiveIdentity(name: String = "orders", scope: String? = "openid profile orders.read",
                         configure: (inout Identity) -> Void = { _ in }) -> Identity {
    makeIdentity(.authorizationCode(seed: nil), clientId: "cli-app", secret: nil) {
        $0.name = name
        $0.scope = scope
        $0.issuer = "https://idp.example.com"
        configure(&$0)
    }
}

let callbackURI = "http://127.0.0.1:8180/.oauth-relay/callback"

/// A login started on a fresh `PendingLogins`, which always has room for one.
func freshLogin(_ identity: Identity, redirectUri: String = callbackURI, returnTo: String? = "/orders", at now: Double,
                random: inout SeededRandom) -> LoginStart {
    var logins = PendingLogins()
    do {
        return try logins.start(identity: identity, redirectUri: redirectUri, returnTo: returnTo, at: now, random: &random)
    } catch {
        preconditionFailure("a fresh PendingLogins refused its first login: \(error)")
    }
}

/// Fails when any rendering of `value` contains one of `secrets`.
func assertHidden(_ secrets: [String], in value: Any, file: StaticString = #filePath, line: UInt = #line) {
    for rendering in everyRendering(of: value) {
        for secret in secrets where !secret.isEmpty {
            XCTAssertFalse(rendering.contains(secret), "\"\(rendering)\" shows a secret", file: file, line: line)
            // Not even the tail that `redacted` would show.
            XCTAssertFalse(rendering.contains(String(secret.suffix(4))) && secret.count >= 16,
                           "\"\(rendering)\" shows the end of a secret", file: file, line: line)
        }
    }
}

/// The query parameters of a URL, decoded, in order.
func queryPairs(_ url: HTTPURL) -> [(name: String, value: String)] {
    FormURLEncoding.decode(url.query ?? "")
}
