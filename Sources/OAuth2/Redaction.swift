import Config

/// How a token, refresh token, secret, password or assertion appears in any description, log
/// line or error of this module: `…` plus at most its last four characters (`…` alone for a
/// value shorter than 16 characters). It is Config's `Secret` rule, so the relay has one.
public func redacted(_ value: String) -> String {
    Secret(value).description
}

/// A URL as shown in descriptions and errors: scheme, authority and path, with any query
/// (which may carry a key) shown as `?…`.
func redactedURL(_ url: HTTPURL) -> String {
    "\(url.scheme.rawValue)://\(url.authority)\(url.path)" + (url.query == nil ? "" : "?…")
}
