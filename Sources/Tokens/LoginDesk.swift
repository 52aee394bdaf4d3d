// LoginDesk: the relay's side of browser logins (authorization code + PKCE), shared by every
// worker. It keeps the logins in flight (`PendingLogins`, under one lock), builds the
// authorization request a login start redirects to, and checks a callback: its `state` names
// a login of this browser (the login's cookie), and its code is handed to the identity's
// lifecycle, whose token thread exchanges it like any fetch, so requests wait for it as they
// wait for a token. Nothing here blocks or does I/O.

import Crypto
import JOSE
import Locking
import OAuth2
import SafeText

public final class LoginDesk: Sendable {
    private let pending = Locked(PendingLogins())
    private let inbox: TokenInbox
    private let observer: (any TokenObserver)?

    init(inbox: TokenInbox, observer: (any TokenObserver)?) {
        self.inbox = inbox
        self.observer = observer
    }

    /// A cookie of one login, bound to the browser that starts it.
    public struct LoginCookie: Sendable {
        public let name: String
        /// The browser binding; nil clears the cookie.
        let value: Secret?
        public let path: String
        public let maxAgeSeconds: Int

        /// The `Set-Cookie` value. HttpOnly (no script reads it), SameSite=Lax (sent on the
        /// IdP's top-level redirect back, not on cross-site subrequests), scoped to the callback's
        /// path, and Secure on an https listener.
        public func setCookie(secure: Bool) -> String {
            "\(name)=\(value?.value ?? ""); Path=\(path); Max-Age=\(value == nil ? 0 : maxAgeSeconds); HttpOnly; SameSite=Lax"
                + (secure ? "; Secure" : "")
        }

        /// The cookie's name for a login's `state`: each login in flight has its own, so logins
        /// in several tabs do not overwrite each other's binding.
        static func name(forState state: Secret) -> String {
            "oauth_relay_login_" + Base64URL.encode(SHA256.hash(Array(state.value.utf8)).prefix(9))
        }
    }

    /// Where a login start sends the browser, and the cookie it sets.
    public struct BrowserLogin: Sendable {
        public let identity: String
        public let location: String
        public let cookie: LoginCookie
    }

    /// Why a login cannot start.
    public enum Unavailable: Error, Sendable, CustomStringConvertible {
        case notBrowserLogin(identity: String, grant: String)
        /// The IdP's endpoints are not known: discovery is under way (`failure` nil), or failed.
        case endpointsUnknown(identity: String, failure: TokenEndpointError?)
        case tooManyLogins(PendingLogins.Full)

        /// When trying again may help without anyone changing anything (discovery under way or
        /// the IdP unreachable for now, logins in flight expiring), in seconds; nil when only a
        /// configuration change or the IdP's operator can (metadata that lacks an endpoint).
        public var retryAfterSeconds: Int? {
            switch self {
            case .notBrowserLogin: nil
            case .endpointsUnknown(_, nil): 1
            case .endpointsUnknown(_, let failure?): failure.isTemporary ? 5 : nil
            case .tooManyLogins(let full): full.retryAfterSeconds
            }
        }

        public var description: String {
            switch self {
            case .notBrowserLogin(let identity, let grant):
                "identity \(identity) does not log in with a browser (its grant is \(grant))"
            case .endpointsUnknown(let identity, nil):
                "identity \(identity) cannot start a login yet: its IdP's endpoints are being discovered"
            case .endpointsUnknown(let identity, let failure?):
                "identity \(identity) cannot start a login: its IdP's endpoints are not known (\(failure))"
            case .tooManyLogins(let full):
                full.description
            }
        }
    }

    /// Starts a browser login for `tokens`; `returnTo`: the path to go back to afterwards;
    /// `browserOrigin`: the origin the browser started it at, where its cookie will be.
    public func startBrowserLogin(_ tokens: IdentityTokens, returnTo: String?, browserOrigin: String?,
                                  at now: Double) throws(Unavailable) -> BrowserLogin {
        guard case .authorizationCode = tokens.identity.grant else {
            throw .notBrowserLogin(identity: tokens.identity.name, grant: tokens.identity.grant.grantType)
        }
        // The identity as its login asks for it: with the scope of a step-up the upstream asked for.
        let (asked, endpoints, failure) = tokens.update { ($0.browserLoginStarts(at: now), $0.endpoints, $0.lastError) }
        let identity = asked.identity
        guard let redirectUri = identity.redirectUri else {
            throw .notBrowserLogin(identity: identity.name, grant: identity.grant.grantType)
        }
        guard let authorization = endpoints?.authorization else {
            throw .endpointsUnknown(identity: identity.name, failure: failure)
        }
        // A generator with storage: an empty one's address means nothing, and ThreadSanitizer's
        // check of the inout access in generic code (`PendingLogins.start`) reads it anyway and
        // crashes (swiftlang/swift#61244), which would keep logins out of the sanitized tests. One
        // 4 KiB draw per login started costs nothing next to the redirect it answers.
        var random = BufferedSecureRandom()
        let started = pending.withLock { pending in
            Result { () throws(PendingLogins.Full) in
                try pending.start(identity: identity, redirectUri: redirectUri.description, returnTo: returnTo,
                                  browserOrigin: browserOrigin, timeoutSeconds: identity.loginTimeoutSeconds, stepUp: asked.stepUp,
                                  at: now, random: &random)
            }
        }
        let login: LoginStart
        switch started {
        case .success(let value): login = value
        case .failure(let full): throw .tooManyLogins(full)
        }
        observer?.loginEnded(identity: identity.name, kind: .browser, outcome: .started)
        let request = AuthorizationRequest(endpoint: authorization, identity: identity, login: login)
        let cookie = LoginCookie(name: LoginCookie.name(forState: login.state), value: login.browserBinding,
                                 path: redirectUri.path, maxAgeSeconds: Int(identity.loginTimeoutSeconds.rounded(.up)))
        return BrowserLogin(identity: identity.name, location: request.location, cookie: cookie)
    }

    /// What a callback did.
    public enum CallbackResult: Sendable {
        /// The code goes to the token endpoint; the browser goes to `returnTo` (or the status
        /// page of `identity`).
        case exchanging(identity: String, returnTo: String?, clear: LoginCookie)
        /// The IdP ended the login with an error (`access_denied` when the person declined).
        case idpError(identity: String?, error: OAuthError, clear: LoginCookie?)
        /// Not a callback of a login of this browser: 400 with `reason`.
        case refused(reason: String, clear: LoginCookie?)
        /// The login started at `origin`, where the browser keeps its cookie: the same callback
        /// goes on there (the browser came back to the redirect URI's host, not the one it used).
        case elsewhere(origin: String)
    }

    /// A request to a callback path: the `path` it came to, its `query` (without `?`), the
    /// browser's cookies and the `origin` it named.
    public func callback(path: String, query: String, cookies: [(name: String, value: String)], origin: String?,
                         identities: TokenSet, at now: Double) -> CallbackResult {
        let parsed: AuthorizationCallback
        do throws(AuthorizationCallbackProblem) {
            parsed = try AuthorizationCallback.parse(query: query, issuer: nil)
        } catch {
            return .refused(reason: "the callback is malformed: \(error)", clear: nil)
        }
        guard let state = parsed.state else {
            if case .error(let error, _) = parsed { return .idpError(identity: nil, error: error, clear: nil) }
            return .refused(reason: "the callback carries no state", clear: nil)
        }
        let cookieName = LoginCookie.name(forState: state)
        let binding = cookies.first { $0.name == cookieName }.map { Secret($0.value) }
        let login: LoginStart
        let completed = pending.withLock { pending in
            Result { () throws(LoginRefusal) in try pending.complete(state: state, browserBinding: binding, origin: origin, at: now) }
        }
        switch completed {
        case .success(let started):
            login = started
        case .failure(.startedElsewhere(_, let origin)):
            return .elsewhere(origin: origin)
        case .failure(let error):
            if case .expired(let identity, _, let stepUp) = error {
                observer?.loginEnded(identity: identity, kind: .browser, outcome: .failed("expired"))
                // A step-up login that timed out is not asked for again (a login that carried
                // none leaves alone the step-ups asked for since).
                if let stepUp { identities[identity]?.publish { $0.stepUpDeclined(also: stepUp) } }
            }
            // The cookie was scoped to the callback's path: only a clearing cookie with that
            // same path replaces it (RFC 6265 §5.3), so it is the path this callback came to.
            let clears = error == .unknownState || { if case .expired = error { true } else { false } }()
            return .refused(reason: error.description, clear: clears ? LoginCookie(name: cookieName, value: nil, path: path, maxAgeSeconds: 0) : nil)
        }
        guard let tokens = identities[login.identity], case .authorizationCode = tokens.identity.grant else {
            return .refused(reason: "identity \(login.identity) is no longer configured for a browser login", clear: nil)
        }
        let clear = LoginCookie(name: cookieName, value: nil, path: tokens.identity.redirectUri?.path ?? "/", maxAgeSeconds: 0)
        // The issuer is checked now that the login, and so the IdP, is known (RFC 9207).
        let checked: AuthorizationCallback
        do throws(AuthorizationCallbackProblem) {
            let issuerRequired = tokens.update { $0.endpoints?.issuerInCallback ?? false }
            checked = try AuthorizationCallback.parse(query: query, issuer: tokens.identity.issuer, issuerRequired: issuerRequired)
        } catch {
            fail(tokens, "the callback did not come from the identity's IdP: \(error)", code: "refused")
            return .refused(reason: "the callback did not come from the identity's IdP: \(error)", clear: clear)
        }
        switch checked {
        case .error(let error, _):
            fail(tokens, "the IdP ended the login: \(error.code.rawValue)" + (error.errorDescription.map { " (\($0))" } ?? ""),
                 code: error.code.metricLabel, endsStepUp: login.stepUp)
            return .idpError(identity: login.identity, error: error, clear: clear)
        case .code(let code, _):
            // Published: the workers' cached tokens are dropped, so requests wait for this login's.
            let accepted = tokens.publish { $0.codeReceived(code, login: login) }
            guard accepted else {
                return .refused(reason: "identity \(login.identity) cannot exchange the code: its token endpoint is not known", clear: clear)
            }
            inbox.post(.reconsider(tokens))
            return .exchanging(identity: login.identity, returnTo: login.returnTo, clear: clear)
        }
    }

    /// Starts a device login for `tokens` unless one is under way (or it holds a valid token): an
    /// operator's (`oauth-relay login`, the admin API), so the wait requests keep after logins that
    /// ended without a token does not hold it back. `replacingLogin` (`oauth-relay login --force`):
    /// it starts even while a token is held, which stays in use until the new login's replaces it.
    /// Returns whether a login started (false: one is under way, or none is needed).
    @discardableResult
    public func startDeviceLogin(_ tokens: IdentityTokens, replacingLogin: Bool = false) -> Bool {
        guard case .deviceCode = tokens.identity.grant else { return false }
        guard tokens.update({ $0.requestDeviceLogin(at: monotonicSeconds(), byOperator: true, replacingLogin: replacingLogin) }) else {
            return false
        }
        inbox.post(.reconsider(tokens))
        return true
    }

    /// Forgets the logins in flight for `identity`: a logout, or a reload that removed the
    /// identity or changed what its logins depend on (`PendingLogins.loginCarriesOver`; see
    /// `TokenService.replace`). Their callbacks are then refused as unknown.
    public func cancel(identity: String) {
        pending.withLock { _ = $0.cancel(identity: identity) }
    }

    /// The login ended at its callback: `reason` for the pages, `code` for the metric (the IdP's
    /// error as `OAuthErrorCode.metricLabel` gives it, or `refused`).
    /// `endsStepUp`: the IdP ended a login for this step-up (the person declined it, or the IdP
    /// would not grant it): it is remembered as declined, so the same challenge does not start
    /// another login.
    private func fail(_ tokens: IdentityTokens, _ reason: String, code: String, endsStepUp stepUp: StepUp? = nil) {
        tokens.publish { lifecycle in
            lifecycle.loginFailed(reason)
            if let stepUp { lifecycle.stepUpDeclined(also: stepUp) }
            return true
        }
        observer?.loginEnded(identity: tokens.identity.name, kind: .browser, outcome: .failed(code))
    }
}
