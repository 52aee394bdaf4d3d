// SelfSignedFetch: the fetches of an identity whose access token its own key signs (a Google
// service account with `audience`, or `selfSignedJwt`: AIP-4111). No request goes anywhere and
// nothing is stored: the key makes a new token whenever one is due, on this replica as on any
// other, in under a millisecond (one RSA-2048 signature, 0.37 ms on the build machine), less than
// a store's lock or a Redis round trip would cost.
//
// Why a fetch strategy and not a branch elsewhere: everything around the token stays as it is for
// a fetched one. The lifecycle starts the fetch when the token is due (at start, before expiry by
// `refreshSkewSeconds`' margin, after an upstream's refusal, on an operator's refresh) and counts it
// in flight; the token is recorded by `TokenRequests.record` like a token endpoint's answer, so the
// waiting requests wake, the refresh timer is armed, `/identities` and `/readyz` show it, and the
// metrics count it (`oauth_relay_token_requests_total`, the expiry gauge). IdPClient stays the
// place that talks to IdPs, and the stores never see these tokens.

import FoundationEssentials
import OAuth2

/// Runs on the token loop only.
final class SelfSignedFetch: TokenFetchStrategy {
    private let requests: TokenRequests
    /// For the key the identity's file holds now (a rotated key file is read again).
    private let idp: IdPClient

    init(requests: TokenRequests, idp: IdPClient) {
        self.requests = requests
        self.idp = idp
    }

    /// Makes the token now, on the token thread, and records it at once, as a token endpoint's
    /// answer would be. `request` (the lifecycle's jwt-bearer request to the key's `token_uri`) is
    /// never sent.
    func begin(_ request: TokenRequest, for tokens: IdentityTokens, retired: Bool) {
        let outcome: Result<TokenResponse, TokenEndpointError>
        if let account = idp.currentIdentity(of: tokens).grant.serviceAccount {
            outcome = Result { () throws(TokenEndpointError) in
                try account.selfSignedToken(issuedAt: IssuedAt.now(), unixTime: Date().timeIntervalSince1970)
            }
        } else {
            outcome = .failure(.serviceAccountJWTFailed(reason: "identity \(tokens.identity.name) has no service account key"))
        }
        requests.record(outcome, for: tokens)
    }

    func fetchSatisfied(_ tokens: IdentityTokens) {}

    var keepsTokens: Bool { false }

    func keep(_ held: HeldTokens, for tokens: IdentityTokens) {}

    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens) {}

    func holdsLockOrLease(slot: Int) -> Bool { false }

    func forget(slot: Int) {}

    func stop() {}
}
