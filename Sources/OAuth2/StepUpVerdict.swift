/// What a login that carried a step-up brought, judged against what the step-up asked for. An
/// IdP may grant less scope than asked (RFC 6749 §3.3) and may not satisfy `acr_values` or
/// `max_age` (RFC 9470 §4, OpenID Connect Core §3.1.2.1): a step-up the token cannot be shown
/// to meet is unmet, so that the same challenge is not asked again login after login.
struct StepUpVerdict: Sendable, Equatable {
    /// The asked scopes the token was granted: what the identity's scope widens by.
    var granted: StepUp
    /// Why the login did not meet the step-up (nil: it did).
    var unmet: String?

    /// `asked`: the step-up the login carried; `grantedScope`: the token response's `scope`
    /// (nil: RFC 6749 §5.1, the scope asked for); `authentication`: what the login's checked ID
    /// token said (nil: none was checked).
    init(asked: StepUp, grantedScope: String?, authentication: LoginAuthentication?) {
        let grantedTokens = grantedScope.map { Set($0.split(separator: " ").map(String.init)) }
        let kept = asked.scope.filter { grantedTokens?.contains($0) ?? true }
        granted = StepUp(scope: kept)
        if kept.count < asked.scope.count {
            unmet = "the IdP granted less scope than asked for"
        } else if !asked.acrValues.isEmpty, !(authentication?.acr.map(asked.acrValues.contains) ?? false) {
            unmet = "no checked ID token names one of the acr_values asked for"
        } else if asked.maxAge != nil, authentication?.authTime == nil {
            unmet = "no checked ID token gives the auth_time max_age asks for"
        } else {
            unmet = nil
        }
    }
}
