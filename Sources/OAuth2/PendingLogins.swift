import Crypto
import SafeText

/// The authorization-code logins in flight for every identity of a relay: a value the relay
/// keeps behind one lock, with the clock and the random source passed in.
///
/// How the relay drives it:
/// 1. A login starts (a browser on a route that needs one, `POST /identities/NAME/login`):
///    `start(...)` gives a `LoginStart`; the relay sets `browserBinding` as an HttpOnly,
///    SameSite=Lax cookie on its callback's path and redirects to the `AuthorizationRequest`
///    built from it.
/// 2. The callback arrives: `AuthorizationCallback.parse` reads its query, then
///    `complete(state:browserBinding:origin:at:)` with the state, the cookie and the origin it
///    came to gives back the login (removed: a state works once) or a `LoginRefusal`: for the
///    400 page, or, when the cookie is missing because the login started at another origin
///    (`startedElsewhere`), for a redirect to the same callback there. An IdP error callback
///    completes its login too, so it ends rather than waiting for its expiry.
/// 3. Now and then (a timer at `nextExpiry`, or on every start) `sweep(at:)` drops the expired
///    ones; `cancel(identity:)` drops an identity's logins (logout, removed by a reload).
///
/// Bounds: at most `capacityPerIdentity` logins per identity, so a script hitting the login URL
/// cannot grow memory. A start beyond that is refused (`Full`) rather than dropping a login in
/// flight: whoever starts logins must not end another person's (that person would come back
/// from the IdP to "unknown login").
public struct PendingLogins: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let defaultCapacityPerIdentity = 64
    /// RFC 8252 and the issue: a login left alone for ten minutes is abandoned.
    public static let defaultTimeoutSeconds: Double = 600

    public let capacityPerIdentity: Int
    /// Logins by their `state` value. A hash lookup is not constant-time, but `state` has 256
    /// random bits: timing cannot guess one. The browser binding, which a guess could target
    /// once a state is known, is compared in constant time.
    private var logins: [String: Entry] = [:]
    private var started: UInt64 = 0

    private struct Entry: Sendable {
        var login: LoginStart
        /// Order of starting, to name expired logins in that order (times can tie).
        var sequence: UInt64
    }

    public init(capacityPerIdentity: Int = PendingLogins.defaultCapacityPerIdentity) {
        precondition(capacityPerIdentity > 0, "a login needs room for at least one")
        self.capacityPerIdentity = capacityPerIdentity
    }

    public var count: Int { logins.count }

    public func count(for identity: String) -> Int {
        logins.values.count { $0.login.identity == identity }
    }

    /// When the next login expires (arm a timer to `sweep`), nil when none is pending.
    public var nextExpiry: Double? {
        logins.values.map(\.login.expiresAt).min()
    }

    /// Starts a login for `identity`: fresh state, browser binding, PKCE verifier and (when
    /// the identity's scope has `openid`) nonce, expiring `timeoutSeconds` after `now`.
    /// `redirectUri` is the callback URL the authorization request names; `returnTo` is kept
    /// only when it is a path on the relay (`LoginReturn.path`); `browserOrigin` is where the
    /// browser started it (and so where its cookie is); `stepUp`: the step-up it asks for (pass
    /// the identity with the step-up's scope joined, `TokenLifecycle.loginIdentity`, so its
    /// nonce follows the scope asked for). Throws `Full` when the identity has
    /// `capacityPerIdentity` logins in flight.
    public mutating func start(identity: Identity, redirectUri: String, returnTo: String?, browserOrigin: String? = nil,
                               timeoutSeconds: Double = PendingLogins.defaultTimeoutSeconds, stepUp: StepUp? = nil,
                               at now: Double, random: inout some RandomNumberGenerator) throws(Full) -> LoginStart {
        sweep(at: now)
        let mine = logins.values.filter { $0.login.identity == identity.name }
        guard mine.count < capacityPerIdentity else {
            let freed = mine.map(\.login.expiresAt).min() ?? now
            throw Full(identity: identity.name, inFlight: mine.count, retryAfterSeconds: max(1, Int((freed - now).rounded(.up))))
        }
        let login = LoginStart(identity: identity.name, redirectUri: redirectUri, returnTo: returnTo, browserOrigin: browserOrigin,
                               wantsNonce: identity.requestsIDToken, startedAt: now,
                               expiresAt: now + max(1, timeoutSeconds), stepUp: stepUp, random: &random)
        started += 1
        logins[login.state.value] = Entry(login: login, sequence: started)
        return login
    }

    /// The callback for `state` arrived at `origin` with `browserBinding` (the cookie, nil when
    /// missing): the login, removed so it cannot be completed twice, or why not.
    ///
    /// A missing or wrong binding does not consume the state: a callback replayed in another
    /// browser must not cancel the real login in progress. A missing one at another origin than
    /// the login's start is `startedElsewhere`: the cookie is in the browser's jar for that
    /// origin, so the callback goes on there (where a browser without it is refused). An unknown
    /// or expired state touches no other login.
    public mutating func complete(state: Secret, browserBinding: Secret?, origin: String? = nil,
                                  at now: Double) throws(LoginRefusal) -> LoginStart {
        guard let entry = logins[state.value] else { throw .unknownState }
        let login = entry.login
        guard now < login.expiresAt else {
            logins[state.value] = nil
            throw .expired(identity: login.identity, timeoutSeconds: login.expiresAt - login.startedAt, stepUp: login.stepUp)
        }
        if browserBinding == nil, let started = login.browserOrigin, let origin, started != origin {
            throw .startedElsewhere(identity: login.identity, origin: started)
        }
        guard let browserBinding,
              ConstantTime.equal(Array(browserBinding.value.utf8), Array(login.browserBinding.value.utf8)) else {
            throw .wrongBrowser(identity: login.identity)
        }
        logins[state.value] = nil
        return login
    }

    /// Drops the logins expired at `now`; returns their identities' names (one per login, for
    /// the "login failed: expired" metric).
    @discardableResult
    public mutating func sweep(at now: Double) -> [String] {
        let expired = logins.filter { $0.value.login.expiresAt <= now }
        for state in expired.keys { logins[state] = nil }
        return expired.values.sorted { $0.sequence < $1.sequence }.map(\.login.identity)
    }

    /// Drops every login of `identity` (logged out, or gone after a reload); returns how many.
    @discardableResult
    public mutating func cancel(identity: String) -> Int {
        let before = logins.count
        logins = logins.filter { $0.value.login.identity != identity }
        return before - logins.count
    }

    /// Whether a login started for `old` can still be completed once a reload made the identity
    /// `new`: the same grant and client at the same IdP (issuer, authorization and token
    /// endpoints), with the same callback and scope (the scope decides the nonce). Otherwise the
    /// reload cancels it, and its callback is refused as unknown.
    public static func loginCarriesOver(from old: Identity, to new: Identity) -> Bool {
        old.grant.grantType == new.grant.grantType && old.clientAuth.clientId == new.clientAuth.clientId && old.issuer == new.issuer
            && old.authorizationUrl == new.authorizationUrl && old.tokenUrl == new.tokenUrl && old.redirectUri == new.redirectUri
            && old.scope == new.scope
    }

    public var description: String {
        let byIdentity = Dictionary(grouping: logins.values, by: \.login.identity).map { "\($0.key) \($0.value.count)" }.sorted()
        return "PendingLogins(\(logins.count) in flight" + (byIdentity.isEmpty ? "" : ": " + byIdentity.joined(separator: ", ")) + ")"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["logins": description], displayStyle: .struct)
    }
}

extension PendingLogins {
    /// A login start refused: `identity` has `inFlight` logins, the most it keeps; the first of
    /// them expires (freeing room) within `retryAfterSeconds`.
    public struct Full: Error, Sendable, Equatable, CustomStringConvertible {
        public let identity: String
        public let inFlight: Int
        public let retryAfterSeconds: Int

        public var description: String {
            "identity \(identity) has \(inFlight) logins in flight, as many as the relay keeps; "
                + "finish or abandon one (they expire), then start again (in at most \(retryAfterSeconds) s)"
        }
    }
}

/// Why a callback's state did not complete a login: what the relay's 400 page says.
public enum LoginRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No login has this state: forged, already used, expired and swept, or the relay restarted.
    case unknownState
    /// `stepUp`: the step-up the login carried, if any.
    case expired(identity: String, timeoutSeconds: Double, stepUp: StepUp? = nil)
    /// The browser lacks the cookie of the login's start (another browser, or cookies blocked).
    case wrongBrowser(identity: String)
    /// The cookie is missing here because the login started at `origin`: not a refusal, the
    /// callback goes on there (a redirect to the same callback path and query).
    case startedElsewhere(identity: String, origin: String)

    /// A short code for metrics and logs.
    public var code: String {
        switch self {
        case .unknownState: "unknown_state"
        case .expired: "expired"
        case .wrongBrowser: "wrong_browser"
        case .startedElsewhere: "started_elsewhere"
        }
    }

    public var description: String {
        switch self {
        case .unknownState:
            "this login is unknown or was already completed; start the login again"
        case .expired(let identity, let timeout, _):
            "the login for identity \(identity) was not completed within \(SecondsText.format(timeout)) s; start it again"
        case .wrongBrowser(let identity):
            "the login for identity \(identity) was started in another browser (its login cookie is missing or different); "
                + "finish it in the browser that started it, or start it again here"
        case .startedElsewhere(let identity, let origin):
            "the login for identity \(identity) was started at \(origin), where its login cookie is; it is finished there"
        }
    }
}
