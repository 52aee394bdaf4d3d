internal import CLibUV

/// Host-name resolution on the libuv thread pool (`uv_getaddrinfo`); the result arrives on the
/// loop. Callers cache results (see the proxy's upstream pool): this does not.
public enum Resolver {
    public static func resolve(on loop: EventLoop, host: String, port: UInt16,
                               completion: @escaping (Result<[SocketAddress], UVError>) -> Void) {
        if let literal = SocketAddress(ip: host, port: port) {
            completion(.success([literal]))
            return
        }
        let box = Unmanaged.passRetained(ResolveRequest(loop: loop, completion: completion))
        let request = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
        request.pointee.data = box.toOpaque()
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        loop.openHandles += 1
        let rc = uv_getaddrinfo(loop.uv, request, onResolved, host, String(port), &hints)
        if rc < 0 {
            loop.openHandles -= 1
            request.deallocate()
            box.release()
            reportLater(.failure(UVError(rc)), on: loop, to: completion)
        }
    }

    /// A lookup libuv refused at once (a name too long to convert, say) is reported on the next
    /// loop turn, as one that fails on the thread pool is: a caller may not yet hold what the
    /// answer is about. The upstream pool hands a connection to its exchange only when `acquire`
    /// returns; a failure reported inside it reached nobody, and the request waited forever.
    private static func reportLater(_ result: Result<[SocketAddress], UVError>, on loop: EventLoop,
                                    to completion: @escaping (Result<[SocketAddress], UVError>) -> Void) {
        var timer: LoopTimer?
        timer = LoopTimer(loop: loop) {
            timer?.close()
            timer = nil
            completion(result)
        }
        timer?.start(afterMilliseconds: 0)
    }
}

private final class ResolveRequest {
    let loop: EventLoop
    let completion: (Result<[SocketAddress], UVError>) -> Void
    init(loop: EventLoop, completion: @escaping (Result<[SocketAddress], UVError>) -> Void) {
        self.loop = loop
        self.completion = completion
    }
}

private let onResolved: uv_getaddrinfo_cb = { request, status, list in
    let box = Unmanaged<ResolveRequest>.fromOpaque(request!.pointee.data)
    let pending = box.takeRetainedValue()
    request!.deallocate()
    pending.loop.openHandles -= 1
    defer { if let list { uv_freeaddrinfo(list) } }
    guard status == 0 else {
        pending.completion(.failure(UVError(status)))
        return
    }
    var addresses: [SocketAddress] = []
    var entry = list
    while let current = entry {
        if let address = current.pointee.ai_addr,
           address.pointee.sa_family == sa_family_t(AF_INET) || address.pointee.sa_family == sa_family_t(AF_INET6) {
            addresses.append(SocketAddress(copying: address))
        }
        entry = current.pointee.ai_next
    }
    pending.completion(addresses.isEmpty ? .failure(UVError(UV_EAI_NONAME.rawValue)) : .success(addresses))
}
