// Logins in the token lifecycle. A browser login's code arrives from the relay's callback
// (`codeReceived`): the exchange becomes the next fetch, due at once, and requests wait for it
// like for any fetch. Its ID token is checked by the token thread before `fetchSucceeded`.
//
// Logins in several tabs: a code that arrives while another code's exchange is under way waits
// for its turn (the latest one waiting wins: that person logged in last). The exchange under way
// keeps its own code and nonce, so each ID token is checked against its own login, and neither
// a background refresh ending nor the other exchange failing drops the waiting code.

import SafeText


extension TokenLifecycle {
    /// The callback brought `code` for `login`: exchange it next (after the exchange under way,
    /// if there is one). False when the token endpoint is not known (discovery has not
    /// succeeded), so the code cannot be used.
    public mutating func codeReceived(_ code: Secret, login: LoginStart) -> Bool {
        guard let tokenEndpoint = endpoints?.token else { return false }
        // `login` here is the login the code is for; `self.login` the identity's logins.
        self.login.waitingCode = CodeExchange(request: TokenRequest.authorizationCode(for: identity, code: code, verifier: login.verifier,
                                                                                      redirectUri: login.redirectUri, at: tokenEndpoint),
                                              nonce: login.nonce, stepUp: login.stepUp)
        return true
    }

    /// A login ended without a token (the IdP's error, a refused callback, an ID token that
    /// failed its checks): the pages show `reason`.
    public mutating func loginFailed(_ reason: String) {
        login.lastFailure = reason
    }

    /// The ID token of the exchange in flight was checked: `who` logged in, authenticated as it
    /// says (taken with its token by `fetchSucceeded`).
    public mutating func loggedIn(as who: LoginSubject) {
        activity.updateFetch { $0.loggedIn(as: who) }
    }

    /// The ID token of the exchange in flight was checked: `who` logged in (nil: it names nobody).
    public mutating func loggedIn(as who: String?) {
        activity.updateFetch { $0.loggedIn(as: who.map { LoginSubject(subject: $0) }) }
    }

    /// A token store will be read for this interactive identity: until it is
    /// (`storedLoginRead`), requests wait rather than being told to log in.
    public mutating func awaitStoredLogin() {
        login.awaitingStoredLogin = true
    }

    /// With a token store, before anything else: what the identity's entry holds. An
    /// interactive identity fetches nothing until it holds a refresh token, so this is how a
    /// person's login survives a restart. Returns whether requests must hear of it (something
    /// was taken, or they waited for the entry).
    public mutating func storedLoginRead(_ stored: AccessToken?, refreshToken storedRefreshToken: Secret?, subject: String?,
                                         at now: Double) -> Bool {
        let waited = login.awaitingStoredLogin
        login.awaitingStoredLogin = false
        guard identity.grant.isInteractive, activity.fetch == nil, token == nil, held.refreshToken == nil || storedRefreshToken != nil else {
            return waited
        }
        let taken = held.restore(stored, refreshToken: storedRefreshToken, at: now)
        if taken { login.restored(subject: subject) }
        return taken || waited
    }
}
