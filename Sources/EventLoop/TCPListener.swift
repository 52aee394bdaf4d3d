internal import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on one loop. With `reusePort`, every worker binds its own socket to
/// the same address and the kernel spreads connections between them (`SO_REUSEPORT`). libuv
/// 1.44 has no `UV_TCP_REUSEPORT`, so the socket is created with `uv_tcp_init_ex` and the option
/// set before `uv_tcp_bind`.
public final class TCPListener: LoopHandle {
    var handle: UnsafeMutablePointer<uv_tcp_t> { storage.assumingMemoryBound(to: uv_tcp_t.self) }
    private var onAccept: ((TCPStream) -> Void)?

    public init(loop: EventLoop, address: SocketAddress, reusePort: Bool, backlog: Int32 = 1024,
                onAccept: @escaping (TCPStream) -> Void) throws(UVError) {
        self.onAccept = onAccept
        super.init(loop: loop, handleType: uv_tcp_t.self)
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let rc = uv_tcp_init_ex(loop.uv, handle, UInt32(family))
        guard rc == 0 else {
            abandon()
            throw UVError(rc)
        }
        didOpen()
        do throws(UVError) {
            if reusePort {
                var fd: uv_os_fd_t = -1
                try check(uv_fileno(uvHandle, &fd))
                var on: Int32 = 1
                if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                    throw UVError(-errno)
                }
            }
            try check(address.withSockaddr { uv_tcp_bind(handle, $0, 0) })
            try check(uv_listen(UnsafeMutablePointer(OpaquePointer(handle)), backlog) { server, status in
                Unmanaged<TCPListener>.fromOpaque(server!.pointee.data)._withUnsafeGuaranteedRef {
                    $0.acceptOne(server!, status: status)
                }
            })
        } catch {
            close()
            throw error
        }
    }

    /// The bound address (useful when binding port 0).
    public var localAddress: SocketAddress? {
        SocketAddress.read { uv_tcp_getsockname(handle, $0, $1) }
    }

    private func acceptOne(_ server: UnsafeMutablePointer<uv_stream_t>, status: Int32) {
        guard status == 0, !isClosed else { return }
        // A failed accept (EMFILE, the peer already gone) drops that one connection only.
        guard let stream = try? TCPStream.accept(on: loop, from: server) else { return }
        onAccept?(stream)
    }

    override func willClose() {
        onAccept = nil
    }
}
