import JOSE
import SafeText

/// Validation of the ID token a login's code exchange returned (OpenID Connect Core
/// §3.1.3.7), before the relay says who logged in: the signature against the IdP's JWKS (RS256,
/// PS256 or ES256 only, never `none` or HS256), `iss` the issuer, `aud` containing the client
/// id (and `azp` the client id when there are several audiences, or whenever it is present),
/// `exp` and `iat` with a small leeway, and the login's `nonce`. A login for a step-up that asked
/// for `max_age` (RFC 9470, OpenID Connect Core §3.1.2.1) must have an `auth_time`, when the ID
/// token carries one, no older than that (with the leeway): an IdP that ignored it did not
/// authenticate the person as fresh as the upstream asked.
///
/// An ID token signed with a key the JWKS does not hold yet gives `.keyNotFound`: the IdP may
/// have rotated its keys, so refetch the JWKS once and check again; a second `.keyNotFound` is
/// a refusal.
public struct IDTokenCheck: Sendable, Equatable {
    /// The algorithms an ID token may be signed with, whatever the metadata says.
    public static let supportedAlgorithms: Set<JWSAlgorithm> = [.rs256, .ps256, .es256]

    public let issuer: String
    public let clientId: String
    /// The nonce of the login (`LoginStart.nonce`); nil when none was sent.
    public let nonce: Secret?
    /// `supportedAlgorithms`, narrowed to those the IdP publishes when it publishes any.
    public let algorithms: Set<JWSAlgorithm>
    public let leewaySeconds: Int64
    /// The `max_age` of the step-up the login asked for (nil: none).
    public var maxAge: Int?

    /// `publishedAlgorithms` is the metadata's `id_token_signing_alg_values_supported`.
    public init(issuer: String, clientId: String, nonce: Secret?, publishedAlgorithms: [String] = [], leewaySeconds: Int64 = 60) {
        self.issuer = issuer
        self.clientId = clientId
        self.nonce = nonce
        let named = Set(publishedAlgorithms.compactMap(JWSAlgorithm.init(rawValue:)))
        let narrowed = Self.supportedAlgorithms.intersection(named)
        self.algorithms = narrowed.isEmpty ? Self.supportedAlgorithms : narrowed
        self.leewaySeconds = leewaySeconds
    }

    /// Who `idToken` says logged in, if it passes every check at `unixTime` (wall-clock seconds).
    public func validate(_ idToken: Secret, keys: JWKSet, unixTime: Int64) throws(IDTokenError) -> LoginSubject {
        let claims: JWTClaims
        do throws(JOSEError) {
            claims = try JWT.verifiedClaims(idToken.value, keys: keys, allowing: algorithms,
                                            rules: JWTValidationRules(issuer: issuer, audience: clientId, nonce: nonce?.value),
                                            now: unixTime, leeway: leewaySeconds)
        } catch {
            if case .keyNotFound = error { throw .keyNotFound }
            throw .rejected(error.description)
        }
        guard claims.issuedAt != nil else { throw .rejected("the iat claim is missing") }
        guard let subject = claims.subject, !subject.isEmpty else { throw .rejected("the sub claim is missing") }
        let authorizedParty = claims["azp"]?.string
        if claims.audience.count > 1, authorizedParty == nil {
            throw .rejected("it has several audiences but no azp claim")
        }
        if let authorizedParty, authorizedParty != clientId {
            throw .rejected("the azp claim is not the client id \"\(clientId)\"")
        }
        if let maxAge, let authTime = claims["auth_time"]?.integer {
            // Saturating: neither a huge max_age nor an auth_time far in the past or future may trap.
            let age = Self.saturating(unixTime.subtractingReportingOverflow(authTime), sign: authTime < 0 ? 1 : -1)
            let allowed = Self.saturating(Int64(clamping: maxAge).addingReportingOverflow(leewaySeconds), sign: 1)
            if age > allowed {
                throw .rejected("the person authenticated \(age) s before, longer ago than the max_age of \(maxAge) s "
                                    + "the upstream asked for")
            }
        }
        return LoginSubject(subject: subject, preferredUsername: claims["preferred_username"]?.string,
                            email: claims["email"]?.string, name: claims["name"]?.string,
                            authentication: LoginAuthentication(acr: claims["acr"]?.string, authTime: claims["auth_time"]?.integer))
    }
}

extension IDTokenCheck {
    /// An operation's value, or the bound of `Int64` on the side of `sign` when it overflowed.
    static func saturating(_ result: (partialValue: Int64, overflow: Bool), sign: Int) -> Int64 {
        guard result.overflow else { return result.partialValue }
        return sign < 0 ? .min : .max
    }
}

/// Why an ID token was not accepted.
public enum IDTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No key in the JWKS fits the token: refetch the JWKS once and check again.
    case keyNotFound
    /// The token fails a check; `reason` names the rule (never a claim's secret value, the
    /// nonce, or the token).
    case rejected(String)

    public var description: String {
        switch self {
        case .keyNotFound: "the ID token is signed with a key the identity provider's JWKS does not hold"
        case .rejected(let reason): "the ID token was refused: \(reason)"
        }
    }
}

/// Who logged in, from a validated ID token: for the result page and `/identities`.
public struct LoginSubject: Sendable, Equatable, CustomStringConvertible {
    /// `sub`: the IdP's stable identifier of the person.
    public let subject: String
    public let preferredUsername: String?
    public let email: String?
    public let name: String?
    /// How the person authenticated, as the ID token says (what a step-up login must show).
    public let authentication: LoginAuthentication

    public init(subject: String, preferredUsername: String? = nil, email: String? = nil, name: String? = nil,
                authentication: LoginAuthentication = LoginAuthentication()) {
        self.subject = subject
        self.preferredUsername = preferredUsername
        self.email = email
        self.name = name
        self.authentication = authentication
    }

    /// What to call the person: `preferred_username`, else `email`, else `sub`.
    public var displayName: String {
        preferredUsername ?? email ?? subject
    }

    public var description: String { displayName }
}

/// How a person authenticated at a login, from its checked ID token (OpenID Connect Core §2):
/// what a step-up asking for `acr_values` or `max_age` needs shown (`StepUpVerdict`).
public struct LoginAuthentication: Sendable, Equatable {
    /// `acr`: the authentication context class the IdP says it satisfied.
    public var acr: String?
    /// `auth_time`: when the person authenticated (Unix seconds).
    public var authTime: Int64?

    public init(acr: String? = nil, authTime: Int64? = nil) {
        self.acr = acr
        self.authTime = authTime
    }
}
