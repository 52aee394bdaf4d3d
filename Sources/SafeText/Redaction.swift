/// How a token, secret, password or assertion appears in any description, log line or error of
/// the relay: `…` plus at most its last four characters (`…` alone for a value shorter than 16
/// characters), enough to tell two long secrets apart in a log and too little to use one.
/// `Secret`, `HTTPField` and the OAuth2 types all show values this way, so the relay has one rule.
public func redacted(_ value: String) -> String {
    value.count >= 16 ? "…" + value.suffix(4) : "…"
}
