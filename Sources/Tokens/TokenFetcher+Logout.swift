import Foundation
import HTTPClient
import OAuth2

/// How a logout ended (`oauth-relay logout`, `DELETE /identities/NAME/token`).
public enum LogoutOutcome: Sendable, Equatable {
    /// The IdP revoked the refresh token (RFC 7009).
    case revoked
    /// No refresh token was held, or the IdP has no revocation endpoint: forgetting was all.
    case nothingToRevoke
    /// The tokens are forgotten, but the IdP did not confirm the revocation.
    case revocationFailed(String)
}

extension TokenFetcher {
    /// Forgets the identity's store entry and revokes `refreshToken` (or the one the entry held)
    /// at the IdP's revocation endpoint, when it has one.
    func logout(_ tokens: IdentityTokens, refreshToken held: Secret?, completion: (@Sendable (LogoutOutcome) -> Void)?) {
        let refreshToken = held ?? persistence?.read(tokens).refreshToken
        persistence?.remove(tokens)
        shared?.remove(tokens)
        let endpoints = tokens.update { $0.endpoints }
        guard let refreshToken, let revocation = endpoints?.revocation, let tokenEndpoint = endpoints?.token else {
            completion?(.nothingToRevoke)
            return
        }
        let unsigned = TokenRequest.revocation(for: tokens.identity, token: refreshToken, hint: .refreshToken, at: revocation,
                                               tokenEndpoint: tokenEndpoint)
        let name = tokens.identity.name
        sendToIdP(unsigned, for: tokens) { [logger] result, request in
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    try request.parseRevocation(reply, unixTime: Date().timeIntervalSince1970)
                    logger.info("refresh token revoked", metadata: ["identity": .string(name)])
                    completion?(.revoked)
                } catch {
                    logger.warning("refresh token revocation refused", metadata: ["identity": .string(name), "error": .string("\(error)")])
                    completion?(.revocationFailed("\(error)"))
                }
            case .failure(let error):
                logger.warning("refresh token revocation failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
                completion?(.revocationFailed("\(error)"))
            }
        }
    }
}
