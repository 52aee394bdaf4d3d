// CallerCheck: how far a request on a route with `inbound` got with its caller's token, from the
// head to the token the request goes on with. A request whose token the issuer's keys at hand
// cannot verify is parked until the keys are read (at most `tokenWaitSeconds`, as a token wait,
// and woken the same way); then the route's identity token, if any, is looked up.
//
//   notRequired (no inbound)
//   head's check → admitted(caller) ─────────────────────────────▶ identity token lookup
//                → waitingForKeys ─(keys read)─▶ admitted(caller) ─▶ identity token lookup
//                                 └─(refused, or tokenWaitSeconds)─▶ answered here

enum CallerCheck {
    case notRequired
    /// Parked until the issuer's keys are read; `parserPausedAtHead`: a body follows, unparsed.
    case waitingForKeys(token: String, parserPausedAtHead: Bool)
    case admitted(CheckedCaller)

    /// The caller the route admitted (nil: none required, or not yet).
    var caller: CheckedCaller? {
        if case .admitted(let caller) = self { return caller }
        return nil
    }

    var isWaitingForKeys: Bool {
        if case .waitingForKeys = self { return true }
        return false
    }
}
