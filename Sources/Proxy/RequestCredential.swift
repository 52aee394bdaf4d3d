// RequestCredential: the route identity's token for one request, from the head's lookup to the
// token the request carries. A request whose token is not ready is parked until the identity's
// fetch ends (at most `tokenWaitSeconds`, on its connection's timer); a parked request with a
// body stopped its parser after the head, and resumes it once the wait ends. After the upstream
// refused the first token, the request waits again and is replayed with the next one.
//
//   none (no identity)
//   head's lookup → carried(token) ─(refused, answer drained)→ waiting(beforeReplay) → replayed(token)
//                 → waiting(beforeForwarding) → carried(token), or none (the fetch failed)

import OAuth2

enum RequestCredential {
    /// The route forwards without a token.
    case none
    /// Parked until the identity's fetch ends (at most `tokenWaitSeconds`).
    case waiting(Wait)
    /// Injected into the request as sent.
    case carried(WorkerTokens.CachedToken)
    /// Injected into the request sent again after the upstream refused the first token: a
    /// second refusal goes to the client.
    case replayed(WorkerTokens.CachedToken)

    enum Wait {
        /// Before the request went anywhere; with a body, the parser stopped after the head.
        case beforeForwarding(parserPausedAtHead: Bool)
        /// For a replay after the upstream refused the token.
        case beforeReplay
    }

    /// What a lookup for a waiting request ends in.
    enum WaitEnd {
        /// Not this identity's result, or a new fetch began: park again, to the same deadline.
        case keepWaiting
        case forward(resumeParser: Bool)
        /// No token: the relay answers (503, or what the identity's state says).
        case fail(TokenUnavailable, resumeParser: Bool)
    }

    /// The token injected into the request (nil: none, or still waiting).
    var injected: WorkerTokens.CachedToken? {
        switch self {
        case .carried(let token), .replayed(let token): return token
        case .none, .waiting: return nil
        }
    }

    var isWaiting: Bool {
        if case .waiting = self { return true }
        return false
    }

    var isReplay: Bool {
        if case .replayed = self { return true }
        return false
    }

    /// The identity's token was looked up again for a waiting request.
    mutating func lookedUp(_ lookup: WorkerTokens.Lookup) -> WaitEnd {
        guard case .waiting(let wait) = self else { return .keepWaiting }
        var resumeParser = false
        if case .beforeForwarding(let paused) = wait { resumeParser = paused }
        switch lookup {
        case .wait:
            return .keepWaiting
        case .inject(let token):
            if case .beforeReplay = wait { self = .replayed(token) } else { self = .carried(token) }
            return .forward(resumeParser: resumeParser)
        case .fail(let reason):
            self = .none
            return .fail(reason, resumeParser: resumeParser)
        }
    }

    /// Why a request that waited `tokenWaitSeconds` for `identity`'s token gets a 503: no
    /// request hangs on a token endpoint that does not answer.
    static func waitExpired(identity: String, tokenWaitSeconds: Double) -> TokenUnavailable {
        TokenUnavailable(identity: identity, reason: .unavailable, retryAfterSeconds: 1,
                         detail: "no token for identity \(identity) within tokenWaitSeconds "
                             + "(\(SecondsText.format(tokenWaitSeconds)) s): the token endpoint has not answered")
    }
}
