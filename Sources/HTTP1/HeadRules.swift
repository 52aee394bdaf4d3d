/// The rules a complete head must meet before the relay acts on it, beyond what llhttp checks in
/// strict mode: each is a way for two HTTP implementations to disagree on where a message ends,
/// what it is for, or whom it is for (request smuggling, response splitting). Pure: tested on
/// parsed heads, applied by `HTTP1Parser` when a head is complete.
extension HTTPHead {
    /// Why this head must be refused, or nil.
    func framingProblem(of kind: HTTP1Parser.Kind) -> HTTP1Error? {
        if connectionListsFramingField {
            return HTTP1Error(.malformed, "Connection lists Content-Length, Transfer-Encoding or Host")
        }
        if versionMajor != 1 {
            return versionMajor == 0 ? HTTP1Error(.malformed, "HTTP/0.9 is not supported")
                : HTTP1Error(.unsupportedVersion, "only HTTP/1.x is spoken here")
        }
        if kind == .response && !(100...999).contains(statusCode) {
            return HTTP1Error(.malformed, "a status code must have three digits")
        }
        if hasTransferEncoding {
            // RFC 9112 §6.1 and §6.3: an HTTP/1.0 message with Transfer-Encoding has faulty
            // framing, and a request whose codings do not end in chunked has no known length.
            if versionMinor == 0 {
                return HTTP1Error(.malformed, "Transfer-Encoding in an HTTP/1.0 message")
            }
            if kind == .request && !isChunked {
                return HTTP1Error(.malformed, "Transfer-Encoding without chunked as the final coding")
            }
            if !transferCodingIsOnlyChunked() {
                return HTTP1Error(.unsupportedTransferCoding, "transfer codings other than one chunked are not supported")
            }
        }
        if kind == .request && hostIndex == nil && (versionMajor, versionMinor) >= (1, 1) {
            return HTTP1Error(.badHost, "HTTP/1.1 request without a Host header")
        }
        return nil
    }
}
