import FoundationEssentials
import OAuth2

extension TokenFetcher {
    /// Sends a device login's authorization request; its answer (the code a person enters, or
    /// why not) wakes the requests waiting for it.
    func authorizeDevice(_ tokens: IdentityTokens, _ unsigned: TokenRequest) {
        let name = tokens.identity.name
        observer?.loginEnded(identity: name, kind: .device, outcome: .started)
        sendToIdP(unsigned, for: tokens) { [self] result, request in
            guard !stopping else { return }
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
            }
            runNextAction(tokens)
        }
    }
}

extension TokenFetcher {
    /// A login's last step ended (a code exchange, or a device poll that ended the flow).
    func countLogin(_ purpose: TokenRequest.Purpose?, _ outcome: Result<TokenResponse, TokenEndpointError>, failure: String?, of name: String) {
        let kind: LoginKind
        switch purpose {
        case .grant(.authorizationCode)?: kind = .browser
        case .grant(.deviceCode)?: kind = .device
        default: return
        }
        switch outcome {
        case .success:
            observer?.loginEnded(identity: name, kind: kind, outcome: .completed)
        case .failure(let error) where kind == .browser:
            observer?.loginEnded(identity: name, kind: kind, outcome: .failed(error.metricLabel))
        case .failure(let error):
            // A device poll: only an answer that ends the flow ends the login.
            guard !DeviceFlow.isWaitingForThePerson(error), !error.isTemporary, failure != nil else { return }
            observer?.loginEnded(identity: name, kind: kind, outcome: .failed(error.metricLabel))
        }
    }
}
