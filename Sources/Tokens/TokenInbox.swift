// How work reaches the token thread: every piece of it is a message in one inbox, handled on the
// token loop in the order it was posted. A configuration's identity set, a request waiting for a
// token, an operator's refresh, the end of a token request (and next: a finished login, a store
// read, a shared cache's answer) all arrive the same way, so the token loop has one entry point
// (`TokenFetcher.handle`) and one order of events to reason about.

import HTTPClient
import EventLoop
import OAuth2
import Locking
import SafeText
import TLS

/// One piece of work for the token loop.
enum TokenMessage: Sendable {
    /// A configuration's identities to put in force (start or reload). Each set is adopted, even
    /// when two reloads come before the loop wakes, so that an identity only the first one had
    /// still fetches for the requests that began under it.
    case adopt(FetcherUpdate)
    /// Requests wait for this identity's token: make sure a fetch is under way. It may be an
    /// identity a reload retired since the requests began.
    case needToken(IdentityTokens)
    /// Something changed that may make a fetch due (a token dropped or forgotten, an operator's
    /// refresh): look at this identity again.
    case reconsider(IdentityTokens)
    /// An operator forgot an `auto` identity's registered client (`--forget-client`): delete it
    /// at its server (RFC 7592) and from the stores; `completion` hears how, on the token thread.
    case forgetClient(IdentityTokens, completion: @Sendable (ClientDeletion) -> Void)
    /// An operator forgot the identity's tokens (a logout): remove the store entries and revoke the refresh token (the one held when
    /// the logout began, or else the entry's) at the IdP; tell `completion` how each went.
    case logout(IdentityTokens, refreshToken: Secret?, completion: LogoutListener?)
    /// Requests need an inbound issuer's keys, and InboundKeyState decided to fetch them.
    case needKeys(InboundKeys)
    /// A worker's lookup began an exchange of a caller's token for this identity's
    /// (`CallerTokens`): send it.
    case exchangeForCaller(IdentityTokens, CallerExchange)
    /// A worker asks about a caller's opaque token (InboundIntrospections).
    case introspect(IntrospectionQuestion)
    /// A token request ended (posted by the token loop itself).
    case fetchEnded(IdentityTokens, Result<TokenResponse, TokenEndpointError>)
    /// Stop: abandon token requests under way and let the loop end.
    case stop
}

/// A new identity set for the token loop, with the TLS configuration of each https token
/// endpoint by slot, and of each `auto` identity's https resource.
struct FetcherUpdate: Sendable {
    let identities: [IdentityTokens]
    let tls: [Int: TLSConfiguration]
    var resourceTLS: [Int: TLSConfiguration] = [:]
    let limits: HTTPClientLimits
}

/// The token loop's inbox: any thread posts, the loop takes everything at once when woken.
final class TokenInbox: Sendable {
    private let messages = Locked<[TokenMessage]>([])
    private let wakeup: LoopWakeup
    /// Told the number of messages waiting after each post and take (the queue-depth gauge).
    private let observer: (any TokenObserver)?

    init(wakeup: LoopWakeup, observer: (any TokenObserver)? = nil) {
        self.wakeup = wakeup
        self.observer = observer
    }

    /// Thread-safe. A `needToken` or `reconsider` already waiting for the same identity is not
    /// posted twice: a burst of parked requests costs one message.
    func post(_ message: TokenMessage) {
        let posted = messages.withLock { queue -> Bool in
            if let tokens = message.coalescingIdentity,
               queue.contains(where: { $0.coalescingIdentity === tokens && $0.isSameKind(as: message) }) {
                return false
            }
            queue.append(message)
            // Under the lock: a take that follows sets 0 after this count, never before it.
            observer?.tokenInboxDepthChanged(queue.count)
            return true
        }
        if posted { wakeup.wake() }
    }

    /// On the token loop.
    func takeAll() -> [TokenMessage] {
        messages.withLock { queue in
            defer {
                queue.removeAll()
                observer?.tokenInboxDepthChanged(0)
            }
            return queue
        }
    }
}

extension TokenMessage {
    /// The identity of a message that may be coalesced with an equal one still queued.
    fileprivate var coalescingIdentity: IdentityTokens? {
        switch self {
        case .needToken(let tokens), .reconsider(let tokens): tokens
        case .adopt, .fetchEnded, .logout, .forgetClient, .needKeys, .exchangeForCaller, .introspect, .stop: nil
        }
    }

    fileprivate func isSameKind(as other: TokenMessage) -> Bool {
        switch (self, other) {
        case (.needToken, .needToken), (.reconsider, .reconsider): true
        default: false
        }
    }
}
