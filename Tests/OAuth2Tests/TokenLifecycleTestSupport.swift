import Endpoints
import OAuth2
import SafeText
import XCTest

/// A lifecycle with no jitter (or the given fraction of it).
func makeLifecycle(_ identity: Identity = makeIdentity(), jitter: Double = 0) -> TokenLifecycle {
    TokenLifecycle(identity: identity, random: FixedRandom(fraction: jitter))
}

func tokenResponse(_ value: String, expiresIn: Double, refreshToken: String? = nil) -> TokenResponse {
    TokenResponse(accessToken: Secret(value), expiresIn: expiresIn, refreshToken: refreshToken.map(Secret.init))
}

/// A password identity, whose responses usually carry refresh tokens.
func passwordIdentity() -> Identity {
    makeIdentity(.password(username: "svc", password: Secret("pw")))
}

extension TokenLifecycle {
    /// Starts the fetch due at `now`, failing the test when none is, and returns its request.
    @discardableResult
    mutating func startFetch(at now: Double, file: StaticString = #filePath, line: UInt = #line) throws -> TokenRequest {
        try XCTUnwrap(startFetchIfDue(at: now), "no fetch was due at \(now)", file: file, line: line)
    }

    /// Starts the fetch due at `now` and answers it with `response` at once.
    @discardableResult
    mutating func fetch(at now: Double, answer response: TokenResponse,
                        file: StaticString = #filePath, line: UInt = #line) throws -> TokenRequest {
        let request = try startFetch(at: now, file: file, line: line)
        fetchSucceeded(response, at: now)
        return request
    }

    /// Starts the fetch due at `now` and fails it with `error` at once.
    mutating func fail(at now: Double, with error: TokenEndpointError, file: StaticString = #filePath, line: UInt = #line) throws {
        try startFetch(at: now, file: file, line: line)
        fetchFailed(error, at: now)
    }

    /// The token `decision(at:)` injects, or nil.
    func injected(at now: Double) -> String? {
        if case .inject(let token) = decision(at: now) { return token.value }
        return nil
    }

    /// The problem `decision(at:)` fails with, or nil.
    func failure(at now: Double) -> TokenUnavailable? {
        if case .fail(let problem) = decision(at: now) { return problem }
        return nil
    }
}

let refusedByIdP = TokenEndpointError.oauth(OAuthError(code: .invalidClient, errorDescription: "unknown client"), status: 401, retryAfter: nil)
let invalidGrant = TokenEndpointError.oauth(OAuthError(code: .invalidGrant, errorDescription: "refresh token revoked"), status: 400, retryAfter: nil)
let idpDown = TokenEndpointError.unreachable(reason: "connection refused")
