// What a Redis Cluster node's reply asks of the client (the cluster specification, "Redirection
// and resharding"): `-MOVED slot host:port` (the slot lives there now: remember it and go there),
// `-ASK slot host:port` (this once, during a migration: go there and say ASKING first),
// `-TRYAGAIN` (a multi-key command during a migration found its keys split: ask again shortly).

import Endpoints

/// A cluster node's address as the slot map and redirections name it.
public struct ClusterNode: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased; IPv6 without brackets.
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host.lowercased()
        self.port = port
    }

    public var description: String { "\(HostSyntax.bracketed(host)):\(port)" }

    /// `host:port` as a node writes it (the last colon splits, so an IPv6 host needs no
    /// brackets); an empty host is "the node that answered" (`askedHost`), as Redis 7 writes
    /// it when it does not know its own address.
    init?(_ text: Substring, askedHost: String) {
        guard let colon = text.lastIndex(of: ":"), let port = HostSyntax.port(text[text.index(after: colon)...]) else { return nil }
        var host = text[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        let named = host.isEmpty || host == "?" ? askedHost : String(host)
        guard Self.isValidHost(named) else { return nil }
        self.init(host: named, port: port)
    }

    /// A host a node may name in `CLUSTER SLOTS` or a redirection: a DNS name, an IPv4 or an IPv6
    /// address, at most 253 bytes. Anything else from a server is refused before it reaches the
    /// resolver (which fails a name over 255 bytes at once).
    static func isValidHost(_ host: String) -> Bool {
        host.utf8.count <= 253 && (HostSyntax.isHostName(Substring(host)) || HostSyntax.isIPv6(Substring(host)))
    }
}

/// A reply that sends the command elsewhere.
public enum ClusterRedirection: Sendable, Equatable {
    case moved(ClusterSlot, ClusterNode)
    case ask(ClusterSlot, ClusterNode)
    case tryAgain

    /// The redirection `reply` asks for; nil for any other reply (an answer, or an error that
    /// is the command's own) and for a redirection to no valid host (the error is then the answer).
    public init?(_ reply: RedisReply, askedHost: String) {
        guard case .error(let text) = reply else { return nil }
        let words = text.split(separator: " ")
        switch words.first {
        case "TRYAGAIN":
            self = .tryAgain
        case "MOVED", "ASK":
            guard words.count == 3, let number = Int(words[1]), let slot = ClusterSlot(number),
                  let node = ClusterNode(words[2], askedHost: askedHost) else { return nil }
            self = words[0] == "MOVED" ? .moved(slot, node) : .ask(slot, node)
        default:
            return nil
        }
    }
}
