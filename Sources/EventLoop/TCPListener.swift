internal import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on one loop. With `reusePort`, every worker binds its own socket to
/// the same address and the kernel spreads connections between them (`SO_REUSEPORT`). libuv
/// 1.44 has no `UV_TCP_REUSEPORT`, so the socket is created with `uv_tcp_init_ex` and the option
/// set before `uv_tcp_bind`.
public final class TCPListener: HandleOwner {
    private let loop: EventLoop
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    private var onAccept: ((TCPStream) -> Void)?
    private var closed = false

    public init(loop: EventLoop, address: SocketAddress, reusePort: Bool, backlog: Int32 = 1024,
                onAccept: @escaping (TCPStream) -> Void) throws(UVError) {
        self.loop = loop
        self.onAccept = onAccept
        tcp = .allocate(capacity: 1)
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let rc = uv_tcp_init_ex(loop.uv, tcp, UInt32(family))
        guard rc == 0 else {
            tcp.deallocate()
            throw UVError(rc)
        }
        tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.openHandles += 1
        do throws(UVError) {
            if reusePort {
                var fd: uv_os_fd_t = -1
                try check(uv_fileno(handle, &fd))
                var on: Int32 = 1
                if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                    throw UVError(-errno)
                }
            }
            try check(address.withSockaddr { uv_tcp_bind(tcp, $0, 0) })
            try check(uv_listen(UnsafeMutablePointer(OpaquePointer(tcp)), backlog) { server, status in
                let owner = Unmanaged<TCPListener>.fromOpaque(server!.pointee.data).takeUnretainedValue()
                owner.acceptOne(server!, status: status)
            })
        } catch {
            close()
            throw error
        }
    }

    private var handle: UnsafeMutablePointer<uv_handle_t> { UnsafeMutablePointer(OpaquePointer(tcp)) }

    /// The bound address (useful when binding port 0).
    public var localAddress: SocketAddress? {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutableBytes(of: &storage) { raw in
            uv_tcp_getsockname(tcp, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        guard rc == 0 else { return nil }
        return withUnsafeBytes(of: storage) { SocketAddress(copying: $0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    private func acceptOne(_ server: UnsafeMutablePointer<uv_stream_t>, status: Int32) {
        guard status == 0, !closed else { return }
        // A failed accept (EMFILE, the peer already gone) drops that one connection only.
        guard let stream = try? TCPStream.accept(on: loop, from: server) else { return }
        onAccept?(stream)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        onAccept = nil
        closeHandle(handle)
    }

    func handleDidClose() {
        loop.openHandles -= 1
        tcp.deallocate()
    }
}
