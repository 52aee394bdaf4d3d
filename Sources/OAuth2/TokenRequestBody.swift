import JOSE
import JSON

/// What a request to an IdP carries in its body, with the signatures still to be made for it
/// just before it is sent (`TokenRequest.withClientAssertion`, `withGrantAssertion`: single-use
/// and short-lived, so never made ahead). Each kind carries only the signatures it can take, so an
/// OAuth form never waits for an App JWT, nor GitHub's JSON for a client or grant assertion.
enum TokenRequestBody: Sendable {
    /// `application/x-www-form-urlencoded`: OAuth's token, device authorization and revocation
    /// requests. The form is kept as fields, so private_key_jwt and client_secret_jwt can add
    /// their assertion (RFC 7521 §4.2) to it, and a Google service account its jwt-bearer
    /// `assertion` (RFC 7523 §2.1).
    case form(TokenForm, pendingAssertion: PendingClientAssertion?, pendingGrantAssertion: PendingGrantAssertion?)
    /// `application/json` (nil: no body at all): a GitHub App's installation token request, whose
    /// App JWT goes in `Authorization`.
    case gitHubApp(JSONValue?, pendingJWT: PendingGitHubAppJWT?)

    /// The bytes sent.
    var bytes: [UInt8] {
        switch self {
        case .form(let form, _, _): Array(FormURLEncoding.encode(form.fields).utf8)
        case .gitHubApp(let json, _): json.map { Array($0.serialized.utf8) } ?? []
        }
    }

    /// The `Content-Type` of `bytes`; nil without a body.
    var contentType: String? {
        switch self {
        case .form: "application/x-www-form-urlencoded"
        case .gitHubApp(let json, _): json == nil ? nil : "application/json"
        }
    }

    /// The names of the form's fields or the JSON object's members, in order (for descriptions).
    var fieldNames: [String] {
        switch self {
        case .form(let form, _, _): form.fields.map(\.name)
        case .gitHubApp(let json, _): json?.members?.map(\.name) ?? []
        }
    }

    /// True until the client's signature (a client assertion, an App JWT) has been made.
    var needsSignature: Bool {
        switch self {
        case .form(_, let pending, _): pending != nil
        case .gitHubApp(_, let pending): pending != nil
        }
    }

    /// True until a service account's grant assertion has been made.
    var needsGrantAssertion: Bool {
        if case .form(_, _, _?) = self { true } else { false }
    }
}

/// The App JWT a GitHub App's request still needs (`GitHubAppJWT`): made just before sending,
/// since it lives minutes and GitHub checks its times against its own clock.
struct PendingGitHubAppJWT: Sendable {
    let issuer: String
    let key: ClientAssertionKey

    /// The App JWT, `unixTime` being now.
    func make(unixTime: Int64) throws(TokenEndpointError) -> String {
        do throws(JOSEError) {
            return try GitHubAppJWT.make(issuer: issuer, signer: key.signer, now: unixTime)
        } catch {
            // JOSE errors name the rule or the step, never key material.
            throw .clientAssertionFailed(reason: "the GitHub App JWT: \(error)")
        }
    }
}
