/// One authorization-code login in flight: what the relay sent the IdP, and what it checks and
/// sends when the browser comes back to the callback. Made by `PendingLogins.start`.
///
/// Every value but the identity's name and the times is secret; no description shows one.

import SafeText

public struct LoginStart: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The identity's name (the key in `identities`).
    public let identity: String
    /// `state`, single use: the callback must carry it back.
    public let state: Secret
    /// The value the relay puts in an HttpOnly cookie of the browser that starts the login; the
    /// callback is refused without it (login CSRF: a callback carrying an attacker's code and
    /// state in a victim's browser lacks the attacker's cookie).
    public let browserBinding: Secret
    /// The code verifier (and its challenge for the authorization request).
    public let pkce: PKCE
    /// The OpenID Connect `nonce`, sent when the scope has `openid`; the ID token must carry it.
    public let nonce: Secret?
    /// The `redirect_uri` of the authorization request, sent again in the code exchange
    /// (RFC 6749 §4.1.3 demands the identical value, whatever a reload does meanwhile).
    public let redirectUri: String
    /// Where the browser goes after the login: a path on the relay (`LoginReturn.path`), or nil
    /// for the result page.
    public let returnTo: String?
    /// The origin (`http://localhost:8180`) the browser started the login at, whose cookie jar
    /// holds the binding; nil when not known. A callback arriving at another origin without the
    /// cookie (the redirect URI names `127.0.0.1`, the person browses `localhost`) goes on there.
    public let browserOrigin: String?
    public let startedAt: Double
    public let expiresAt: Double
    /// The step-up this login asks for (an upstream's challenge), nil for a plain login: its
    /// scope joins the identity's in the authorization request, and is the identity's once the
    /// login succeeds.
    public let stepUp: StepUp?

    public var verifier: Secret { pkce.verifier }

    init(identity: String, redirectUri: String, returnTo: String?, browserOrigin: String?, wantsNonce: Bool, startedAt: Double,
         expiresAt: Double, stepUp: StepUp? = nil, random: inout some RandomNumberGenerator) {
        self.stepUp = stepUp
        self.identity = identity
        self.state = Secret.random(using: &random)
        self.browserBinding = Secret.random(using: &random)
        self.pkce = PKCE(random: &random)
        self.nonce = wantsNonce ? Secret.random(using: &random) : nil
        self.redirectUri = redirectUri
        self.returnTo = returnTo.flatMap(LoginReturn.path)
        self.browserOrigin = browserOrigin
        self.startedAt = startedAt
        self.expiresAt = expiresAt
    }

    public var description: String {
        "login for identity \(identity) (started at \(SecondsText.format(startedAt)), expires at \(SecondsText.format(expiresAt))"
            + (nonce == nil ? "" : ", with nonce") + (stepUp.map { ", step-up \($0)" } ?? "") + ")"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["login": description], displayStyle: .struct)
    }
}
