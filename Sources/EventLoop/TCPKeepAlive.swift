internal import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// TCP keepalive probes for a connection that may stay idle for long: after `idleSeconds` without
/// traffic the kernel probes the peer every `intervalSeconds`, and after `probes` unanswered ones
/// the connection fails (its owner hears `didEndWith` an error). A peer lost without a reset — a
/// NAT or load balancer that forgot an idle connection — is so found within
/// `idleSeconds + intervalSeconds × probes`, instead of never on a connection that only listens.
public struct TCPKeepAlive: Sendable, Equatable {
    public var idleSeconds: UInt32
    public var intervalSeconds: UInt32
    public var probes: UInt32

    public init(idleSeconds: UInt32, intervalSeconds: UInt32, probes: UInt32) {
        self.idleSeconds = idleSeconds
        self.intervalSeconds = intervalSeconds
        self.probes = probes
    }
}

extension TCPStream {
    /// Turns keepalive on for the stream's socket (which must exist: after `uv_tcp_connect`).
    /// Nil once set; the first option refused otherwise.
    func enableKeepAlive(_ keepAlive: TCPKeepAlive) -> UVError? {
        let rc = uv_tcp_keepalive(handle, 1, keepAlive.idleSeconds)
        guard rc == 0 else { return UVError(rc) }
        var fd: uv_os_fd_t = -1
        let fileRC = uv_fileno(uvHandle, &fd)
        guard fileRC == 0 else { return UVError(fileRC) }
        for (option, value) in [(TCP_KEEPINTVL, keepAlive.intervalSeconds), (TCP_KEEPCNT, keepAlive.probes)] {
            var number = Int32(clamping: value)
            if setsockopt(fd, Int32(IPPROTO_TCP), option, &number, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                return UVError(-errno)
            }
        }
        return nil
    }

    /// The socket's descriptor; nil before it exists or once closed.
    var socketDescriptor: Int32? {
        var fd: uv_os_fd_t = -1
        return !isClosed && uv_fileno(uvHandle, &fd) == 0 ? fd : nil
    }
}
