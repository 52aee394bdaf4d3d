// The token endpoints' DPoP nonces (RFC 9449 §8): IdPClient puts the latest one in each proof
// and sends a request once more when the endpoint answers `use_dpop_nonce` with a new one.

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
