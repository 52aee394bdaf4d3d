// How the token service hands work to its loop: identity sets to adopt, identities to fetch for.

import Synchronization
import TLS
import HTTPClient

/// A new identity set for the token loop, with the TLS configuration of each https token
/// endpoint by slot.
struct FetcherUpdate: Sendable {
    let identities: [IdentityTokens]
    let tls: [Int: TLSConfiguration]
    let limits: HTTPClientLimits
}

/// Hands identity sets to the token loop, in order: each one is adopted, even when two reloads
/// come before the loop wakes, so that an identity only the first one had still fetches for
/// the requests that began under it.
final class FetcherMailbox: Sendable {
    private let pending = Mutex<[FetcherUpdate]>([])
    /// Identities requests wait for, since the loop last looked.
    private let asked = Mutex<[IdentityTokens]>([])

    func ask(_ tokens: IdentityTokens) {
        asked.withLock { list in
            if !list.contains(where: { $0 === tokens }) { list.append(tokens) }
        }
    }

    func takeAsked() -> [IdentityTokens] {
        asked.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }

    func post(_ update: FetcherUpdate) { pending.withLock { $0.append(update) } }

    func takeAll() -> [FetcherUpdate] {
        pending.withLock { updates in
            defer { updates.removeAll() }
            return updates
        }
    }
}
