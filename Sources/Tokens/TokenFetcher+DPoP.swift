// The token thread's side of DPoP (RFC 9449) for token requests: each request an identity with a
// DPoP key sends carries a fresh proof, with the latest `DPoP-Nonce` its token endpoint gave; a
// `use_dpop_nonce` answer that brings a nonce is answered by sending the request once more with
// it (a new proof and, for the JWT client authentications, a new assertion: both are single-use).

import Crypto
import OAuth2

/// The latest `DPoP-Nonce` of each identity's token endpoint. Kept per identity (by slot), not per
/// URL: servers such as Glewlwyd issue nonces per client, and two identities may be two clients
/// of one endpoint. Token loop only.
final class TokenEndpointNonces {
    private var bySlot: [Int: String] = [:]

    func nonce(for tokens: IdentityTokens) -> String? { bySlot[tokens.slot] }

    /// Keeps the nonce of `reply`, if it carries a valid one (RFC 9449 §8.1: `1*NQCHAR`; any
    /// answer may bring a new one), and says whether to send the request again: the answer was
    /// `use_dpop_nonce` and brought a nonce, and this was not the retry already.
    func answer(_ reply: TokenEndpointReply, outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens,
                alreadyRetried: Bool) -> Bool {
        guard let nonce = reply.header("DPoP-Nonce"), DPoPNonce.isValid(Array(nonce.utf8)) else { return false }
        bySlot[tokens.slot] = nonce
        guard !alreadyRetried, case .failure(let error) = outcome else { return false }
        return error.oauthError?.code == .useDPoPNonce
    }

    func forget(slot: Int) { bySlot[slot] = nil }
}

extension TokenFetcher {
    /// `unsigned` as it goes on the wire: with its client assertion and, for a DPoP identity, its
    /// proof. Signed here, on the token thread, outside the lifecycle's lock, fresh for every
    /// request sent.
    func signed(_ unsigned: TokenRequest, for tokens: IdentityTokens) throws(TokenEndpointError) -> TokenRequest {
        var random = SecureRandomNumberGenerator()
        let unixTime = IssuedAt.now()
        let request = try unsigned.withClientAssertion(unixTime: unixTime, random: &random)
        // Proofs go to the token endpoint only (RFC 9449 §5): not a device authorization or a
        // revocation.
        guard unsigned.purpose.isTokenRequest else { return request }
        switch tokens.dpop {
        case nil:
            return request
        case .failure(let error):
            throw .dpopProofFailed(reason: error.description)
        case .success(let key):
            return try request.withDPoPProof(key, nonce: dpopNonces.nonce(for: tokens), unixTime: unixTime, random: &random)
        }
    }

    /// Notes the `DPoP-Nonce` of a token endpoint's `reply` and says whether to send the request
    /// again with it (`TokenEndpointNonces.answer`), logging and counting a retry.
    func retriesWithNewNonce(_ reply: TokenEndpointReply, outcome: Result<TokenResponse, TokenEndpointError>,
                             for tokens: IdentityTokens, alreadyRetried: Bool) -> Bool {
        guard tokens.dpop != nil, dpopNonces.answer(reply, outcome: outcome, for: tokens, alreadyRetried: alreadyRetried) else {
            return false
        }
        logger.info("token endpoint asked for a DPoP nonce; sending the request again with it",
                    metadata: ["identity": .string(tokens.identity.name)])
        observer?.dpopNonceRetried(identity: tokens.identity.name, server: "token_endpoint")
        return true
    }
}
