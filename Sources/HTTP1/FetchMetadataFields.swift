/// Where a request head carries the fields a browser says a request's origin with: `Origin`
/// and the Fetch Metadata fields `Sec-Fetch-Site`, `-Mode` and `-Dest`. Noted by the parser as
/// each field completes, so that the browser-safety policy, asked of every request, reads them
/// without searching the head: most requests (curl, SDKs, services) carry none.
public struct FetchMetadataFields: Sendable {
    /// Indices into the head's `fields` of the first of each; -1 when absent.
    public private(set) var origin: Int32 = -1
    public private(set) var site: Int32 = -1
    public private(set) var mode: Int32 = -1
    public private(set) var dest: Int32 = -1
    /// One of them came more than once: a browser never sends that, so nothing is read from them.
    public private(set) var repeated = false

    public init() {}

    /// No such field: not a browser, or one too old to say.
    @inline(__always)
    public var isEmpty: Bool { (origin & site & mode & dest) < 0 && !repeated }

    @inline(__always)
    mutating func note(_ known: KnownHeader, at index: Int) {
        func set(_ slot: inout Int32) {
            if slot >= 0 { repeated = true } else { slot = Int32(index) }
        }
        switch known {
        case .origin: set(&origin)
        case .secFetchSite: set(&site)
        case .secFetchMode: set(&mode)
        case .secFetchDest: set(&dest)
        default: break
        }
    }
}
