import Endpoints

/// Which plain http:// URLs an `auto` identity follows: https always; http only to a loopback
/// host, and only when what names the URL is itself on loopback (the issuer, for its
/// registration endpoints; the resource, for its metadata). A server on this machine may serve
/// plain http here; no remote server may send the relay (and its registration access token or
/// initial access token) to plain http.
enum LoopbackHTTP {
    /// `url` may be used when named by `owner` (an issuer identifier or the resource).
    static func allows(_ url: HTTPURL, namedBy owner: HTTPURL) -> Bool {
        url.scheme == .https || (HostSyntax.isLoopback(url.host) && HostSyntax.isLoopback(owner.host))
    }

    /// `url` may be used when named by the issuer `issuer` (not a URL: not on loopback).
    static func allows(_ url: HTTPURL, namedBy issuer: String) -> Bool {
        guard let owner = try? HTTPURL(absolute: issuer) else { return url.scheme == .https }
        return allows(url, namedBy: owner)
    }
}
