internal import CLibUV

/// An IPv4 or IPv6 socket address (a `sockaddr_storage`), cheap to copy.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    var storage = sockaddr_storage()

    /// Parses an IP literal (no brackets for IPv6); nil for host names.
    public init?(ip: String, port: UInt16) {
        let ok: Bool = withUnsafeMutableBytes(of: &storage) { raw in
            if ip.contains(":") {
                return uv_ip6_addr(ip, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)) == 0
            }
            return uv_ip4_addr(ip, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)) == 0
        }
        if !ok { return nil }
    }

    /// Reads an address with `uv_tcp_getsockname`/`uv_tcp_getpeername`-style calls.
    static func read(_ call: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<Int32>) -> Int32) -> SocketAddress? {
        var address = SocketAddress(zeroed: ())
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutableBytes(of: &address.storage) { raw in
            call(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        return rc == 0 ? address : nil
    }

    private init(zeroed: Void) {}

    init(copying address: UnsafePointer<sockaddr>) {
        let length = address.pointee.sa_family == sa_family_t(AF_INET6)
            ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.baseAddress!.copyMemory(from: address, byteCount: length)
        }
    }

    public var isIPv6: Bool { storage.ss_family == sa_family_t(AF_INET6) }

    public var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            isIPv6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                   : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    public func withPort(_ port: UInt16) -> SocketAddress {
        var copy = self
        withUnsafeMutableBytes(of: &copy.storage) { raw in
            if isIPv6 {
                raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port = port.bigEndian
            } else {
                raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = port.bigEndian
            }
        }
        return copy
    }

    /// The address without port, e.g. `127.0.0.1` or `::1`.
    public var ipString: String {
        var text = [CChar](repeating: 0, count: 64)
        withUnsafeBytes(of: storage) { raw in
            if isIPv6 {
                _ = uv_ip6_name(raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self), &text, text.count)
            } else {
                _ = uv_ip4_name(raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self), &text, text.count)
            }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { isIPv6 ? "[\(ipString)]:\(port)" : "\(ipString):\(port)" }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        withUnsafeBytes(of: a.storage) { x in withUnsafeBytes(of: b.storage) { y in x.elementsEqual(y) } }
    }
}
