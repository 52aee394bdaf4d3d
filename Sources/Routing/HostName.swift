import Endpoints
import HTTPFields

/// What a Host header names, read from its raw bytes.
public enum HostName {
    /// The host part of a Host header value: surrounding spaces, a `:port` and one trailing dot
    /// removed, an IPv6 literal without its brackets.
    public static func bounds(in host: UnsafeRawBufferPointer) -> Range<Int> {
        HostIndex.hostBounds(in: host)
    }

    /// The host was written as an IPv6 literal (`[::1]`).
    public static func isIPv6Literal(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> Bool {
        bounds.lowerBound > 0 && host[bounds.lowerBound - 1] == UInt8(ascii: "[")
    }

    /// Whether `host[bounds]` is a dotted-decimal IPv4 address (see `HostSyntax.ipv4Octets`).
    public static func ipv4Octets(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> (UInt8, UInt8, UInt8, UInt8)? {
        HostSyntax.ipv4Octets(host, bounds)
    }

    /// The loopback rule (`HostSyntax.isLoopback`) for the host of a Host header.
    public static func isLoopback(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> Bool {
        // An unclosed `[` leaves it in the bounds: no name, no address.
        guard !bounds.isEmpty, host[bounds.lowerBound] != UInt8(ascii: "[") else { return false }
        return HostSyntax.isLoopback(host, bounds, isIPv6: isIPv6Literal(host, bounds))
    }
}
