// Introspections: the token loop's questions about callers' opaque tokens (RFC 7662), sent to an
// IdP's introspection endpoint through IdPClient as the identity's client (its credentials as its
// files hold them now, its client assertion signed fresh), one question per token however many
// requests carry it (IntrospectionFlights.swift), each caller given the verdict for its own route.

import Endpoints
import FoundationEssentials
import Logging
import OAuth2
import SafeText

/// What an introspection came to, for one caller.
public enum IntrospectionOutcome: Sendable, Equatable {
    /// The IdP answered: the verdict for the caller's route and presentation, and the answer
    /// itself, which may be reused for the same token for `reusableSeconds`
    /// (`IntrospectionResponse.reusableSeconds`; the verdict is the caller's route's only).
    case answered(IntrospectionResponse, verdict: IntrospectionVerdict, reusableSeconds: Int64)
    /// No usable answer: the endpoint was unreachable or slow, refused the relay's client
    /// authentication, or answered something else than an introspection answer. The token was
    /// neither accepted nor refused: a caller answers 503 (`error.isTemporary`) or 502.
    case failed(TokenEndpointError)
    /// Too many different tokens are being asked about at once: nothing was sent.
    case overloaded
    /// The token thread stopped before the IdP answered.
    case stopped
}

/// Runs on the token loop only.
final class Introspections {
    /// Different tokens asked about at once, at most, by default (each holds a connection to the IdP).
    static let defaultMaximumInFlight = 256

    private struct Waiter {
        let rules: IntrospectionRules
        let presentation: TokenPresentation
        let maximumReuseSeconds: Int64
        let completion: (IntrospectionOutcome) -> Void
    }

    private let idp: IdPClient
    private let logger: Logger
    private var flights: IntrospectionFlights<Waiter>

    init(idp: IdPClient, logger: Logger, maximumInFlight: Int = defaultMaximumInFlight) {
        self.idp = idp
        self.logger = logger
        flights = IntrospectionFlights(maximum: maximumInFlight)
    }

    /// How many questions are under way.
    var inFlight: Int { flights.count }

    /// Asks `endpoint`, as the client of `tokens`' identity, about `token`, unless the same
    /// question is under way already; `completion` gets the verdict for `rules` and `presentation`
    /// (always, on the token loop: also when the question could not be sent or the thread stops).
    /// `maximumReuseSeconds` caps how long the answer may be reused
    /// (`IntrospectionResponse.reusableSeconds`).
    func introspect(_ token: Secret, for tokens: IdentityTokens, at endpoint: HTTPURL, rules: IntrospectionRules,
                    presentedAs presentation: TokenPresentation,
                    maximumReuseSeconds: Int64 = IntrospectionResponse.defaultMaximumReuseSeconds,
                    completion: @escaping (IntrospectionOutcome) -> Void) {
        let key = IntrospectionFlightKey(slot: tokens.slot, endpoint: endpoint, token: token)
        let waiter = Waiter(rules: rules, presentation: presentation, maximumReuseSeconds: maximumReuseSeconds, completion: completion)
        switch flights.join(key, waiter) {
        case .joined:
            return
        case .overloaded:
            // Debug only: a flood of made-up tokens must not flood the log as well.
            logger.debug("introspection not sent: too many under way",
                           metadata: ["identity": .string(tokens.identity.name), "in_flight": .stringConvertible(flights.count)])
            return completion(.overloaded)
        case .first:
            break
        }
        // A client assertion names the token endpoint, as for every request to the IdP.
        let tokenEndpoint = tokens.update { $0.endpoints?.token }
        let request = TokenRequest.introspection(for: tokens.identity, token: token, at: endpoint, tokenEndpoint: tokenEndpoint)
        idp.send(request, for: tokens, stopped: { [self] in land(key, .stopped) }) { [self] result, sent in
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    land(key, .success(try sent.parseIntrospection(reply, unixTime: Date().timeIntervalSince1970)))
                } catch {
                    fail(key, error, of: tokens)
                }
            case .failure(let error):
                fail(key, error, of: tokens)
            }
        }
    }

    private func fail(_ key: IntrospectionFlightKey, _ error: TokenEndpointError, of tokens: IdentityTokens) {
        // The token is among the request's secrets: no error quotes it.
        logger.warning("introspection failed", metadata: ["identity": .string(tokens.identity.name),
                                                          "error": .string(error.description(endpoint: "the introspection endpoint"))])
        land(key, .failure(error))
    }

    /// Every waiter of `key` hears how its question ended; an answer is judged per waiter.
    private func land(_ key: IntrospectionFlightKey, _ ending: Ending) {
        let now = Int64(Date().timeIntervalSince1970)
        for waiter in flights.land(key) {
            switch ending {
            case .success(let response):
                waiter.completion(.answered(response, verdict: response.verdict(waiter.rules, presentedAs: waiter.presentation, now: now),
                                            reusableSeconds: response.reusableSeconds(now: now, maximumSeconds: waiter.maximumReuseSeconds)))
            case .failure(let error):
                waiter.completion(.failed(error))
            case .stopped:
                waiter.completion(.stopped)
            }
        }
    }

    private enum Ending {
        case success(IntrospectionResponse)
        case failure(TokenEndpointError)
        case stopped
    }
}
