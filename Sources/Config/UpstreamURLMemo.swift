/// The upstream URLs of one file's routes, each distinct text parsed once: the routes of a
/// large file mostly share a few upstreams, and parsing each route's anew was a fifth of
/// decoding 10,000 routes (callgrind). The same text gives the same URL or the same error.
struct UpstreamURLMemo {
    private var parsed: [String: Result<UpstreamURL, InvalidValue>] = [:]

    mutating func parse(_ text: String) throws(InvalidValue) -> UpstreamURL {
        if let known = parsed[text] { return try known.get() }
        let result: Result<UpstreamURL, InvalidValue>
        do {
            result = .success(try UpstreamURL.parse(text))
        } catch {
            result = .failure(error)
        }
        parsed[text] = result
        return try result.get()
    }
}
