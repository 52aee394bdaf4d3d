import Crypto
import JOSE
import SafeText

/// The client assertion a token request still needs: who signs it and for whom. It is made
/// only when the request is about to be sent (`TokenRequest.withClientAssertion`), because an
/// assertion is single-use (its `jti` is remembered by the IdP) and short-lived (`exp` at most
/// 60 s), so it can be neither made ahead nor reused for a retry.
struct PendingClientAssertion: Sendable {
    enum Key: Sendable {
        case privateKey(ClientAssertionKey)
        /// client_secret_jwt: the HMAC key is the secret's UTF-8 bytes (RFC 7523 §2.2, OpenID
        /// Connect Core §9).
        case secret(Secret)
    }

    let clientID: String
    let audience: String
    let key: Key

    /// The compact JWS for `client_assertion`, `iat` = `unixTime`.
    func make(unixTime: Int64, random: inout some RandomNumberGenerator) throws(TokenEndpointError) -> String {
        do throws(JOSEError) {
            let signer: JWSSigner
            let keyID: String?
            let certificate: JWSCertificateReference?
            switch key {
            case .privateKey(let key):
                (signer, keyID, certificate) = (key.signer, key.keyID, key.certificate)
            case .secret(let secret):
                (signer, keyID, certificate) = (try JWSSigner(hmacSecret: SymmetricKey(Array(secret.value.utf8))), nil, nil)
            }
            return try ClientAssertion.make(clientID: clientID, audience: audience, signer: signer, keyID: keyID,
                                            certificate: certificate, now: unixTime, random: &random)
        } catch {
            // JOSE errors name the rule or the step, never key material.
            throw .clientAssertionFailed(reason: error.description)
        }
    }
}
