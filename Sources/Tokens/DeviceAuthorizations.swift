// DeviceAuthorizations: a device login's first step (RFC 8628), sent through IdPClient; its
// answer goes to the lifecycle, and the identity's next action follows.

import FoundationEssentials
import Logging
import OAuth2

/// Runs on the token loop only.
final class DeviceAuthorizations {
    private let idp: IdPClient
    private let logger: Logger
    private let observer: (any TokenObserver)?
    private unowned let schedule: any FetchSchedule
    /// An `auto` identity's registered client was refused with `invalid_client` (AutoResolver.clientUnknown).
    private let clientUnknown: (IdentityTokens, TokenEndpointError) -> Void

    init(idp: IdPClient, logger: Logger, observer: (any TokenObserver)?, schedule: any FetchSchedule,
         clientUnknown: @escaping (IdentityTokens, TokenEndpointError) -> Void = { _, _ in }) {
        self.idp = idp
        self.logger = logger
        self.observer = observer
        self.schedule = schedule
        self.clientUnknown = clientUnknown
    }

    /// Sends a device login's authorization request; its answer (the code a person enters, or
    /// why not) wakes the requests waiting for it.
    func authorize(_ tokens: IdentityTokens, _ unsigned: TokenRequest) {
        let name = tokens.identity.name
        observer?.loginEnded(identity: name, kind: .device, outcome: .started)
        // Once stopping, no answer comes: the request is cancelled (IdPClient).
        idp.send(unsigned, for: tokens) { [self] result, request in
            let now = monotonicSeconds()
            var outcome: Result<DeviceAuthorization, TokenEndpointError>
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    outcome = .success(try request.parseDeviceAuthorization(reply, unixTime: Date().timeIntervalSince1970))
                } catch {
                    outcome = .failure(error)
                }
            case .failure(let error):
                outcome = .failure(error)
            }
            tokens.publish { lifecycle in
                switch outcome {
                case .success(let authorization): lifecycle.deviceAuthorized(authorization, at: now)
                case .failure(let error): lifecycle.deviceAuthorizationFailed(error, at: now)
                }
                return true
            }
            switch outcome {
            case .success(let authorization):
                logger.info("device login started", metadata: ["identity": .string(name),
                                                               "expires_in": .stringConvertible(Int(authorization.expiresIn))])
            case .failure(let error):
                logger.warning("device authorization failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
                observer?.loginEnded(identity: name, kind: .device, outcome: .failed("refused"))
                // A registered client the server does not know: dropped (and registered again).
                if tokens.configured.auto != nil, error.oauthError?.code == .invalidClient { clientUnknown(tokens, error) }
            }
            schedule.runNextAction(tokens)
        }
    }
}
