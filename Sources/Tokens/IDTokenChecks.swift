// IDTokenChecks: the check of a login's ID token (OpenID Connect) before its tokens are taken,
// with each identity's IdP keys (its JWKS, fetched through IdPClient on first use).

import Endpoints
import FoundationEssentials
import JOSE
import Logging
import OAuth2
import SafeText

/// Runs on the token loop only.
final class IDTokenChecks {
    private let idp: IdPClient
    private let logger: Logger
    /// Each identity's IdP keys for ID tokens, once fetched.
    var keySets: [Int: JWKSet] = [:]

    init(idp: IdPClient, logger: Logger) {
        self.idp = idp
        self.logger = logger
    }

    /// A retired identity is gone: its IdP keys go too.
    func forget(slot: Int) {
        keySets[slot] = nil
    }

    /// Checks the ID token of a login's code exchange (OpenID Connect: signature against the
    /// IdP's JWKS, `iss`, `aud`/`azp`, `exp`/`iat`, the login's `nonce`) and names who logged in.
    /// The JWKS is fetched on first use and once more when the token names a key it lacks (the
    /// IdP rotated its keys). `completion` gets the response, or why it is refused; always, also
    /// once stopping (no JWKS is fetched then, and one under way is cancelled), so the fetch ends
    /// and gives back its store lock and shared lease.
    func check(of response: TokenResponse, for tokens: IdentityTokens,
                      completion: @escaping (Result<TokenResponse, TokenEndpointError>) -> Void) {
        let identity = tokens.identity
        // The nonce of the login whose code this exchange sent (another login's code may be
        // waiting for its turn meanwhile, with its own).
        let (endpoints, nonce, maxAge) = tokens.update { ($0.endpoints, $0.expectedNonce, $0.expectedMaxAge) }
        var check: IDTokenCheck, idToken: Secret, jwks: HTTPURL
        switch IDTokenCheck.plan(for: identity, endpoints: endpoints, nonce: nonce, idToken: response.idToken) {
        case .check(let planned, let token, let keys):
            (check, idToken, jwks) = (planned, token, keys)
            check.maxAge = maxAge
        case .noneAskedFor, .leaveUnread:
            return completion(.success(response))
        case .refuse(let reason):
            logger.warning("ID token refused", metadata: ["identity": .string(identity.name), "error": .string(reason)])
            return completion(.failure(.idToken(reason: reason)))
        }
        let validate = { (keys: JWKSet) -> Result<LoginSubject, IDTokenError> in
            Result { () throws(IDTokenError) in try check.validate(idToken, keys: keys, unixTime: Int64(Date().timeIntervalSince1970)) }
        }
        let accept = { [self] (outcome: Result<LoginSubject, IDTokenError>) in
            switch outcome {
            case .success(let subject):
                tokens.update { $0.loggedIn(as: subject) }
                completion(.success(response))
            case .failure(let error):
                logger.warning("ID token refused", metadata: ["identity": .string(identity.name), "error": .string("\(error)")])
                completion(.failure(.idToken(reason: error.description)))
            }
        }
        if let keys = keySets[tokens.slot], case let outcome = validate(keys), outcome != .failure(.keyNotFound) {
            return accept(outcome)
        }
        let stopped: () -> Void = { completion(.failure(.idToken(reason: "the relay stopped before the IdP's JWKS was read"))) }
        idp.getJSON(jwks, for: tokens, stopped: stopped) { [self] result in
            switch result {
            case .success(let reply) where (200..<300).contains(reply.status):
                do throws(JOSEError) {
                    let keys = try JWKSet(json: reply.body)
                    keySets[tokens.slot] = keys
                    accept(validate(keys))
                } catch {
                    completion(.failure(.idToken(reason: "the IdP's JWKS at \(redactedURL(jwks)) is not usable: \(error)")))
                }
            case .success(let reply):
                completion(.failure(.idToken(reason: "the IdP's JWKS at \(redactedURL(jwks)) answered HTTP \(reply.status)")))
            case .failure(let error):
                completion(.failure(.idToken(reason: "the IdP's JWKS could not be read: \(error)")))
            }
        }
    }
}
