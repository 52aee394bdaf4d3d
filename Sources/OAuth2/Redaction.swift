import Endpoints

/// A URL as shown in descriptions and errors: scheme, authority and path, with any query
/// (which may carry a key) shown as `?…`.
public func redactedURL(_ url: HTTPURL) -> String {
    "\(url.scheme.rawValue)://\(url.authority)\(url.path)" + (url.query == nil ? "" : "?…")
}
