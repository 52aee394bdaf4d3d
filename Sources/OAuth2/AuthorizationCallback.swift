/// What the IdP sent back to the relay's callback (RFC 6749 §4.1.2): a code, or an error, each
/// with the `state` that names the login. Parsing checks the form only; the login itself is
/// found and checked by `PendingLogins.complete`.

import SafeText

public enum AuthorizationCallback: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// RFC 6749 §4.1.2: the code to exchange.
    case code(code: Secret, state: Secret)
    /// RFC 6749 §4.1.2.1: the person refused (`access_denied`) or the IdP could not proceed.
    /// `state` is nil when the IdP sent none (then no login can be matched).
    case error(OAuthError, state: Secret?)

    public var state: Secret? {
        switch self {
        case .code(_, let state): state
        case .error(_, let state): state
        }
    }

    /// Reads the callback's query (the request target's part after `?`, nil when it has none).
    ///
    /// - A parameter sent twice is refused (RFC 6749 §3.1), as is a missing or empty `state`
    ///   alongside a code, or neither `code` nor `error`.
    /// - `iss` (RFC 9207) must equal `issuer` when both are known, and must be present when
    ///   `issuerRequired` (the IdP's metadata says `authorization_response_iss_parameter_supported`):
    ///   this stops a mix-up, where a code from another IdP is sent to this one's token endpoint.
    /// - `error_description` and `error_uri` are cleaned for display (control characters
    ///   dropped, 200 bytes at most).
    public static func parse(query: String?, issuer: String?, issuerRequired: Bool = false)
        throws(AuthorizationCallbackProblem) -> AuthorizationCallback {
        let pairs = FormURLEncoding.decode(query ?? "")
        var values: [String: String] = [:]
        for (name, value) in pairs {
            guard values[name] == nil else { throw .duplicateParameter(ErrorText.clean(String(name.prefix(40)), removing: [])) }
            values[name] = value
        }
        if let sent = values["iss"] {
            if let issuer, sent != issuer { throw .issuerMismatch(expected: issuer) }
        } else if issuerRequired {
            throw .missingIssuer
        }
        let state = values["state"].flatMap { $0.isEmpty ? nil : Secret($0) }
        if let code = values["error"], !code.isEmpty {
            let description = values["error_description"].map { ErrorText.clean($0, removing: []) }
            let uri = values["error_uri"].map { ErrorText.clean($0, removing: []) }
            return .error(OAuthError(code: OAuthErrorCode(ErrorText.clean(code, removing: [])), errorDescription: description,
                                     errorURI: uri), state: state)
        }
        guard let code = values["code"], !code.isEmpty else { throw .missingCode }
        guard let state else { throw .missingState }
        return .code(code: Secret(code), state: state)
    }

    public var description: String {
        switch self {
        case .code: "authorization callback with a code"
        case .error(let error, _): "authorization callback with error \(error)"
        }
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["callback": description], displayStyle: .enum)
    }
}

/// A callback the relay cannot even match to a login. The message names the problem and at
/// most a parameter's name, never a value from the query (which may hold a code).
public enum AuthorizationCallbackProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case missingCode
    case missingState
    case duplicateParameter(String)
    case issuerMismatch(expected: String)
    case missingIssuer

    public var description: String {
        switch self {
        case .missingCode:
            "the callback has neither a code nor an error: it did not come from the identity provider's authorization endpoint"
        case .missingState:
            "the callback has a code but no state, so it belongs to no login of this relay"
        case .duplicateParameter(let name):
            "the callback repeats the parameter \"\(name)\" (RFC 6749 §3.1 forbids it)"
        case .issuerMismatch(let expected):
            "the callback's iss is not \"\(expected)\": the code comes from another identity provider (RFC 9207)"
        case .missingIssuer:
            "the callback lacks iss, which this identity provider promises to send (RFC 9207)"
        }
    }
}
