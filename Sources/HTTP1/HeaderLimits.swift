/// What a parser accepts of a head: its size in bytes (start line and fields, or trailers) and
/// its number of fields.
public struct HeaderLimits: Sendable {
    public var maxHeadBytes: Int
    public var maxFieldCount: Int
    public init(maxHeadBytes: Int, maxFieldCount: Int) {
        self.maxHeadBytes = maxHeadBytes
        self.maxFieldCount = maxFieldCount
    }
}
