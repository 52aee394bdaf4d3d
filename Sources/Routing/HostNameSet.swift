import HTTPFields

/// Host names and wildcard patterns (`orders.local`, `*.dev.example`), asked with the raw bytes
/// of a Host header, case-insensitively and without building a String: the names a listener
/// serves (`hosts`). A wildcard matches names below its suffix, not the suffix itself, as in
/// route matching.
public struct HostNameSet: Sendable {
    private let exact: HostIndex
    private let wildcardSuffixes: HostIndex

    public init(_ patterns: some Sequence<HostPattern>) {
        var exactKeys: [(name: String, value: Int)] = []
        var wildcardKeys: [(name: String, value: Int)] = []
        for pattern in Set(patterns) {
            switch pattern {
            case .exact(let name): exactKeys.append((name, 0))
            case .wildcard(let suffix): wildcardKeys.append((suffix, 0))
            }
        }
        exact = HostIndex(exactKeys)
        wildcardSuffixes = HostIndex(wildcardKeys)
    }

    public var isEmpty: Bool { exact.isEmpty && wildcardSuffixes.isEmpty }

    /// Whether the host in `host[bounds]` (see `HostName.bounds`) is in the set.
    public func contains(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> Bool {
        guard !bounds.isEmpty else { return false }
        if exact.lookup(host, bounds) != nil { return true }
        guard !wildcardSuffixes.isEmpty else { return false }
        var dot = bounds.lowerBound
        while dot < bounds.upperBound - 1 {
            if host[dot] == UInt8(ascii: "."), wildcardSuffixes.lookup(host, (dot + 1)..<bounds.upperBound) != nil { return true }
            dot += 1
        }
        return false
    }
}
