/// What a `TokenLifecycle` remembers of an upstream refusing its token (a route's
/// `retryOnStatus`), so that a burst of refusals causes one fetch and an upstream refusing for
/// other reasons cannot turn its answers into a stream of token requests.
///
/// Transitions: `tokenRefused` → `.refused(nextTokenFollows: true)`; the next token obtained
/// makes that `.replacementHeld`, and any other `.none`; a logout keeps the refused token (a
/// store entry still holding it is not taken back) but the next token no longer follows it.
enum RefusalMemory: Sendable, Equatable {
    /// No refusal to remember.
    case none
    /// An upstream refused `token` (never shown: no description names it). When
    /// `nextTokenFollows`, the next token obtained was fetched because of that refusal.
    case refused(token: String, nextTokenFollows: Bool)
    /// The current token was fetched because an upstream refused its predecessor.
    case replacementHeld

    /// The token an upstream refused last: a store entry still holding it is not taken back.
    var refusedToken: String? {
        if case .refused(let token, _) = self { return token }
        return nil
    }

    /// The current token was fetched because of a refusal (`TokenLifecycle.Refusal.kept`).
    var holdsReplacement: Bool { self == .replacementHeld }

    /// An upstream refused the current token, `value`, which is dropped.
    mutating func tokenRefused(_ value: String) {
        self = .refused(token: value, nextTokenFollows: true)
    }

    /// A fetch brought a new token.
    mutating func tokenFetched() {
        switch self {
        case .refused(_, nextTokenFollows: true): self = .replacementHeld
        case .refused, .replacementHeld, .none: self = .none
        }
    }

    /// A logout: the next token follows no refusal.
    mutating func forgotten() {
        switch self {
        case .refused(let token, _): self = .refused(token: token, nextTokenFollows: false)
        case .replacementHeld, .none: self = .none
        }
    }
}
