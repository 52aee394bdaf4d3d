import HTTPClient

/// The requests to identities' IdPs under way on the token loop — token requests, discovery,
/// JWKS, device authorizations, revocations — so that stopping can cancel every one it does not
/// let finish, and nothing keeps the loop (and `TokenService.stop`) waiting for an answer nobody
/// needs. Token loop only.
final class IdPCalls {
    /// What a request is for, as stopping sees it.
    enum Kind {
        /// A token request: one holding its store lock or shared lease is let finish (its answer
        /// may carry a refresh token the IdP just rotated).
        case tokenRequest
        /// Anything else (discovery, JWKS, device authorization, revocation): cancelled.
        case other
    }

    private struct Entry {
        /// The identity's slot; nil for a request of no identity (an inbound issuer's keys).
        let slot: Int?
        let kind: Kind
        var call: HTTPClientCall?
    }

    private var entries: [UInt64: Entry] = [:]
    private var lastID: UInt64 = 0

    /// Notes a request of `slot` (nil: of no identity) about to be sent; `started` sends it and returns its call. The
    /// request's completion must call `ended` with the id it is given (before or after `started`
    /// returns: a request can fail at once).
    func track(slot: Int?, kind: Kind, _ started: (_ id: UInt64) -> HTTPClientCall) {
        lastID += 1
        let id = lastID
        entries[id] = Entry(slot: slot, kind: kind)
        let call = started(id)
        entries[id]?.call = call
    }

    /// The request `id` ended; false when `cancel` had dropped it already (stopping cancelled it).
    @discardableResult
    func ended(_ id: UInt64) -> Bool {
        entries.removeValue(forKey: id) != nil
    }

    /// Any request of `slot` is under way.
    func hasRequest(slot: Int) -> Bool {
        entries.values.contains { $0.slot == slot }
    }

    /// Cancels every request except the token requests of the slots `letFinish` names. The
    /// cancelled requests' completions run now (with `.cancelled`): a fetch one belonged to ends
    /// there and gives back what it held.
    func cancel(exceptTokenRequestsOf letFinish: (Int) -> Bool) {
        let cancelled = entries.filter { !($0.value.kind == .tokenRequest && $0.value.slot.map(letFinish) == true) }
        for (id, entry) in cancelled.sorted(by: { $0.key < $1.key }) {
            entries[id] = nil
            entry.call?.cancel()
        }
    }
}
