// The state of the request under way on a client connection, and the parts it is made of: what
// its head said and how far its body got (`ExchangeRequest`), its response (`ExchangeResponse`),
// its caller's token, its identity's token, its route and what the metrics and the access log keep
// of it.
//
// A parsed head replaces it whole (`Exchange.headParsed`), so nothing of one request carries
// over to the next. What outlives a request stays on `Exchange`: the connection's phase, the
// count of its requests, whether it stays open, and which reads the write backlogs stopped.
// Between a finished exchange and the next head it still holds the last request's state (its
// route let go), until the next head replaces it or the connection goes idle; a request the
// parser rejects before its head, or whose head does not arrive in time, starts from an empty
// one.
//
// It is kept outside the connection, in a `CurrentExchangeSlot` lent with the connection's
// workspace and given back blank with it: every connection holds an `Exchange`, an idle one
// too, and an idle connection's memory is the relay's memory per connection (issue 25).

import Tokens

/// Everything about one request and its response; changed only by the exchange's events.
/// `headParsed` builds it with the memberwise initializer: a field added here starts from its
/// default for every request.
struct CurrentExchange {
    // Every client connection holds this state, an idle one too (CurrentExchange stays until the
    // next head), so it is kept small: the fields are ordered so that Swift, which lays them out
    // in the order written, leaves little padding, and what few requests need is boxed.

    /// The request half: what the head said, how far the body got, what of it is kept.
    var request = ExchangeRequest()
    /// The request may start a person's device login (`BrowserRequest.loginStartRefusal`):
    /// asked again when a parked request looks its token up anew.
    var startsLogin = false
    /// The caller's token, on a route with `inbound` (CallerCheck.swift).
    var caller = CallerCheck.notRequired
    /// The route identity's token for this request.
    var credential = RequestCredential.none
    /// `uncheckedCaller`'s storage: a reference, not the 34 bytes of a `CallerToken?`.
    var uncheckedCallerBox: UncheckedCaller?
    /// The response half: how far the upstream's answer got, and what it decides.
    var response = ExchangeResponse()
    /// The route of the exchange (nil before the head, when none matched, or once the
    /// exchange finished: `nextRequest` lets go of it).
    var plan: RoutePlan?
    /// For the metrics and the access log.
    var record = ExchangeRecord()
    /// The listed origin (`browser.allowOrigins`) whose page sent the request: its answers
    /// carry that origin's CORS fields.
    var cors: Int?

    /// On a route without `inbound` whose identity exchanges the caller's token (`Grant.caller`):
    /// the request's bearer token taken as it is, for the token endpoint to judge
    /// (RequestLeg+CallerToken.swift). On a route with `inbound`, `caller` holds the checked one.
    var uncheckedCaller: CallerToken? {
        get { uncheckedCallerBox?.token }
        set { uncheckedCallerBox = newValue.map(UncheckedCaller.init) }
    }
}

/// A `CurrentExchange` at a stable address, for `Exchange` to reach through a pointer. A client
/// connection's is lent with its workspace (`ExchangeWorkspace.current`) and given back with it,
/// so an idle connection holds none of it; while it has no workspace, its exchange reads its
/// worker's blank one (`WorkspacePool.blank`), which nothing writes.
final class CurrentExchangeSlot {
    let pointer: UnsafeMutablePointer<CurrentExchange>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: CurrentExchange())
    }

    /// Blank again: what the last request held is let go.
    func reset() {
        pointer.pointee = CurrentExchange()
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}

/// A caller's token taken unchecked (`CurrentExchange.uncheckedCaller`), boxed: only requests on
/// routes that exchange the caller's token have one.
final class UncheckedCaller {
    let token: CallerToken

    init(_ token: CallerToken) {
        self.token = token
    }
}
