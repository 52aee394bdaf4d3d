// DirectFetch: the fetches of a relay without a token store — the token request is sent, and
// nothing is kept or held (TokenFetchStrategy.swift).

import OAuth2

/// Runs on the token loop only.
final class DirectFetch: TokenFetchStrategy {
    private let requests: TokenRequests
    private unowned let schedule: any FetchSchedule

    init(requests: TokenRequests, schedule: any FetchSchedule) {
        self.requests = requests
        self.schedule = schedule
    }

    func begin(_ request: TokenRequest, for tokens: IdentityTokens, retired: Bool) {
        requests.send(request, for: tokens)
    }

    func fetchSatisfied(_ tokens: IdentityTokens) {
        schedule.runNextAction(tokens)
    }

    var keepsTokens: Bool { false }

    func keep(_ held: HeldTokens, for tokens: IdentityTokens) {}

    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens) {}

    func holdsLockOrLease(slot: Int) -> Bool { false }

    func forget(slot: Int) {}

    func stop() {}
}
