import HTTPClient
import OAuth2

/// How long a replica's lease on an identity's shared entry lasts (SharedTokens.swift): long
/// enough for every request the holder may send before it writes, so that the lease cannot run
/// out while the holder still works and let another replica send the same rotating refresh token.
///
/// A holder sends its token request, maybe that request once more with the token endpoint's DPoP
/// nonce (an identity with `dpop`: one retry at most), and maybe a GET of the IdP's JWKS (the ID
/// token of a browser login's code exchange: one fetch at most). Each is bounded by the connect and
/// response timeouts, so the lease is their sum for each request the identity may send, plus a
/// margin for the holder's own work between them.
///
/// Sized, not renewed: renewing before each extra step would put a Redis round trip on the token
/// path and still leave the choice of what to do when the renewal does not come back in time.
/// The cost of a longer lease falls only on a holder that dies mid-fetch: the others wait for its
/// expiry (every live holder ends the wait sooner, with its write or its release).
enum LeaseDuration {
    /// The holder's own work between its requests (signing, parsing, the store).
    static let marginMilliseconds: Int64 = 1000

    /// The requests one fetch of `identity` may send while it holds the lease.
    static func requestsPerFetch(of identity: Identity) -> Int64 {
        var requests: Int64 = 1
        if identity.dpop != nil { requests += 1 }
        if case .authorizationCode = identity.grant { requests += 1 }
        return requests
    }

    static func milliseconds(of identity: Identity, limits: HTTPClientLimits) -> Int64 {
        let perRequest = Int64(limits.connectTimeoutMilliseconds + limits.responseTimeoutMilliseconds)
        return requestsPerFetch(of: identity) * perRequest + marginMilliseconds
    }
}
