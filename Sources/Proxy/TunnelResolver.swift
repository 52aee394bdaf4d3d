import EventLoop

/// A worker's name lookups for its tunnels: at most `maxRunning` on libuv's thread pool at
/// once, up to `maxWaiting` more in line (first in, first out), beyond that refused (the tunnel
/// answers 503); a lookup whose tunnel gave up is dropped from the line, or, when it already
/// runs, its answer is ignored and its place freed when it returns. Answers are kept
/// `dnsCacheSeconds` (`TunnelResolutionCache`). Loop-confined, like its worker.
final class TunnelResolver {
    typealias Completion = (Result<[SocketAddress], UVError>) -> Void

    /// What `resolve` did with a lookup.
    enum Outcome {
        /// Answered already (a cached name or an IP address): the completion ran.
        case answered
        /// Running or waiting: `cancel(ticket)` drops it.
        case pending(ticket: Int)
        /// Too many lookups wait: the completion will not run.
        case refused
    }

    static let maxRunning = 2
    static let maxWaiting = 256
    static let cacheCapacity = 1024

    private let loop: EventLoop
    private var queue = TunnelLookupQueue<Int>(maxRunning: TunnelResolver.maxRunning, maxWaiting: TunnelResolver.maxWaiting)
    private var cache = TunnelResolutionCache<SocketAddress>(capacity: TunnelResolver.cacheCapacity)
    /// The lookups still wanted, running or waiting, by ticket.
    private var wanted: [Int: Lookup] = [:]
    private var nextTicket = 0

    private struct Lookup {
        let host: String
        let port: UInt16
        let cacheMilliseconds: UInt64
        let completion: Completion
    }

    init(loop: EventLoop) {
        self.loop = loop
    }

    func resolve(host: String, port: UInt16, cacheMilliseconds: UInt64, completion: @escaping Completion) -> Outcome {
        if let literal = SocketAddress(ip: host, port: port) {
            completion(.success([literal]))
            return .answered
        }
        if let cached = cache.addresses(of: host, at: loop.nowMilliseconds) {
            completion(.success(cached.map { $0.withPort(port) }))
            return .answered
        }
        let ticket = nextTicket
        nextTicket += 1
        switch queue.admit(ticket) {
        case .refuse:
            return .refused
        case .wait:
            wanted[ticket] = Lookup(host: host, port: port, cacheMilliseconds: cacheMilliseconds, completion: completion)
        case .start:
            wanted[ticket] = Lookup(host: host, port: port, cacheMilliseconds: cacheMilliseconds, completion: completion)
            start(ticket)
        }
        return .pending(ticket: ticket)
    }

    /// The tunnel no longer wants the answer: a waiting lookup leaves the line, a running one's
    /// answer is dropped.
    func cancel(_ ticket: Int) {
        guard wanted.removeValue(forKey: ticket) != nil else { return }
        _ = queue.cancelWaiting(ticket)
    }

    private func start(_ ticket: Int) {
        guard let lookup = wanted[ticket] else { return }
        Resolver.resolve(on: loop, host: lookup.host, port: lookup.port) { [self] result in
            if case .success(let addresses) = result {
                cache.store(addresses, of: lookup.host, at: loop.nowMilliseconds, forMilliseconds: lookup.cacheMilliseconds)
            }
            let completion = wanted.removeValue(forKey: ticket)?.completion
            startNext()
            completion?(result)
        }
    }

    /// A running lookup returned: the next waiting one starts, or answers from the cache when
    /// the name was found meanwhile.
    private func startNext() {
        while let next = queue.finish() {
            guard let lookup = wanted[next] else { continue }
            if let cached = cache.addresses(of: lookup.host, at: loop.nowMilliseconds) {
                // The place is free again: the loop hands it on to the one after.
                wanted.removeValue(forKey: next)
                lookup.completion(.success(cached.map { $0.withPort(lookup.port) }))
                continue
            }
            return start(next)
        }
    }
}
