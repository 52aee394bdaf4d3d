/// The one token request a `TokenLifecycle` has under way, and what its answer needs.
///
/// What a fetch carries depends on what it is for, so each kind holds only its own data: a
/// refresh or the identity's own grant is built again from the lifecycle's state once a token
/// store's entry has been read (it may then use a stored refresh token); a browser login's code
/// exchange and a device poll keep the request they were sent with, which nothing can build
/// again (the code is single-use, the device code belongs to the flow).

import SafeText

struct FetchInFlight: Sendable {
    /// Where the fetch's lifetime counts from: a token's lifetime starts when it was asked for.
    var startedAt: Double
    var kind: Kind

    enum Kind: Sendable {
        /// A refresh or the identity's own grant. `requested`: an operator asked for it, so a
        /// stored token does not make it unnecessary.
        case rebuildable(TokenRequest.Purpose, requested: Bool)
        /// A browser login's code exchange, with who its ID token names once checked
        /// (`TokenLifecycle.loggedIn(as:)`).
        case codeExchange(CodeExchange, subject: LoginSubject?)
        /// A device login's poll of the token endpoint; `stepUp`: what its device authorization
        /// asked for.
        case devicePoll(TokenRequest, stepUp: StepUp? = nil)
    }

    var purpose: TokenRequest.Purpose {
        switch kind {
        case .rebuildable(let purpose, _): purpose
        case .codeExchange: .grant(.authorizationCode)
        case .devicePoll: .grant(.deviceCode)
        }
    }

    /// The request it was sent with, when the lifecycle cannot build it again.
    var fixedRequest: TokenRequest? {
        switch kind {
        case .rebuildable: nil
        case .codeExchange(let exchange, _): exchange.request
        case .devicePoll(let request, _): request
        }
    }

    /// An operator asked for it (a device poll counts as asked for: a person waits on it).
    var requested: Bool {
        switch kind {
        case .rebuildable(_, let requested): requested
        case .codeExchange: false
        case .devicePoll: true
        }
    }

    /// A code exchange's nonce, which its ID token must carry.
    var nonce: Secret? {
        if case .codeExchange(let exchange, _) = kind { return exchange.nonce }
        return nil
    }

    /// The step-up a code exchange's login, or a device poll's authorization, asked for.
    var stepUp: StepUp? {
        switch kind {
        case .codeExchange(let exchange, _): exchange.stepUp
        case .devicePoll(_, let stepUp): stepUp
        case .rebuildable: nil
        }
    }

    /// A code exchange's checked subject (its display name).
    var subject: String? {
        if case .codeExchange(_, let subject) = kind { return subject?.displayName }
        return nil
    }

    /// How the person of a code exchange authenticated, as its checked ID token says (nil: no
    /// ID token was checked).
    var authentication: LoginAuthentication? {
        if case .codeExchange(_, let subject) = kind { return subject?.authentication }
        return nil
    }

    /// The ID token of a code exchange named `who`; other fetches have no ID token.
    mutating func loggedIn(as who: LoginSubject?) {
        if case .codeExchange(let exchange, _) = kind { kind = .codeExchange(exchange, subject: who) }
    }
}

/// A callback's code, with what its exchange needs: it waits in the lifecycle for its turn,
/// then travels in its `FetchInFlight`, so a later callback cannot change the exchange under way.
struct CodeExchange: Sendable {
    var request: TokenRequest
    var nonce: Secret?
    /// The step-up the login asked for (`LoginStart.stepUp`), nil for a plain login.
    var stepUp: StepUp? = nil
}
