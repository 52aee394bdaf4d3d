// What Redis Sentinel and the servers it watches say, as values, and the order the sentinels are
// asked in: the decisions of a Sentinel-managed store with no socket (Tokens' SentinelWatch does
// the I/O).
//
//   SENTINEL get-master-addr-by-name NAME  → MasterLookup: the address, or "no such master"
//   +switch-master "NAME oldip oldport newip newport" → MasterSwitch (for our name only)
//   ROLE on the address named               → ServerRole: only a master is written to
//   an error reply READONLY (or UNBLOCKED)  → the server was demoted: a failover under way

import Endpoints
import HTTPFields

/// A master's address as the sentinels give it.
public struct MasterAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// `host`:`port` as two texts, as the sentinels send them; nil unless the port is a port.
    init?(host: String, port: Substring) {
        guard !host.isEmpty, let port = HostSyntax.port(port) else { return nil }
        self.init(host: host, port: port)
    }

    public var description: String {
        "\(HostSyntax.bracketed(host)):\(port)"
    }
}

/// One sentinel's answer to `SENTINEL get-master-addr-by-name NAME`.
public enum MasterLookup: Sendable, Equatable {
    case master(MasterAddress)
    /// The sentinel does not monitor a master by that name (a nil reply).
    case unknownName
    /// The sentinel could not be asked, refused, or answered something else.
    case unanswered

    public static func command(masterName: String) -> RedisCommand {
        RedisCommand(["SENTINEL", "get-master-addr-by-name", .text(masterName)])
    }

    /// From the reply: `[host, port]`, or nil.
    public init(_ reply: RedisReply) {
        switch reply {
        case .null:
            self = .unknownName
        case .array(let parts):
            guard parts.count == 2, let host = parts[0].text, let port = parts[1].text,
                  let address = MasterAddress(host: host, port: Substring(port)) else {
                self = .unanswered
                return
            }
            self = .master(address)
        default:
            self = .unanswered
        }
    }
}

/// A `+switch-master` message: the sentinels promoted a replica of `masterName`.
public struct MasterSwitch: Sendable, Equatable {
    public static let channel = Array("+switch-master".utf8)

    public var masterName: String
    public var old: MasterAddress
    public var new: MasterAddress

    public init(masterName: String, old: MasterAddress, new: MasterAddress) {
        self.masterName = masterName
        self.old = old
        self.new = new
    }

    /// From the message `NAME oldip oldport newip newport`; nil for anything else.
    public init?(message: [UInt8]) {
        guard let text = String(validating: message, as: UTF8.self) else { return nil }
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 5, let old = MasterAddress(host: String(words[1]), port: words[2]),
              let new = MasterAddress(host: String(words[3]), port: words[4]) else { return nil }
        self.init(masterName: String(words[0]), old: old, new: new)
    }
}

/// What `ROLE` says a server is.
public enum ServerRole: Sendable, Equatable {
    case master
    /// A replica (`slave`) or anything else: never written to.
    case notMaster(String)
    /// Not a ROLE reply.
    case unreadable

    public static let command = RedisCommand(["ROLE"])

    public init(_ reply: RedisReply) {
        guard let parts = reply.elements, let role = parts.first?.text else {
            self = .unreadable
            return
        }
        self = role == "master" ? .master : .notMaster(role.utf8.count <= 16 ? role : "unknown")
    }
}

extension RedisReply {
    /// An error reply of a server that stopped being the master: `-READONLY You can't write
    /// against a read only replica.` to a write, or `-UNBLOCKED force unblock from blocking
    /// operation, instance state changed (master -> replica?)` to a command it was blocking (a
    /// `WAIT`) when it was demoted. A failover is under way or done.
    public var isDemotionSignal: Bool {
        if case .error(let text) = self { return text.hasPrefix("READONLY") || text.hasPrefix("UNBLOCKED") }
        return false
    }

    /// An error reply's first word (`READONLY`, `ERR`); nil for any other reply.
    public var errorCode: String? {
        if case .error(let text) = self { return text.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "" }
        return nil
    }
}

/// One round of asking the sentinels for the master, each at most once, starting with the one
/// that answered last time (a sentinel that is down is not waited for twice in a row).
public struct SentinelRound: Sendable, Equatable {
    /// What to do next.
    public enum Next: Sendable, Equatable {
        /// Ask the sentinel at this index (in the topology's order).
        case ask(Int)
        /// The sentinel at `sentinel` named the master.
        case found(MasterAddress, sentinel: Int)
        /// No sentinel named it: how many do not know the name, how many did not answer.
        case noMaster(unknownName: Int, unanswered: Int)
    }

    private let order: [Int]
    private var position = 0
    private var unknownName = 0
    private var unanswered = 0

    /// `count` sentinels, asked from `first` on, wrapping around.
    public init(count: Int, first: Int) {
        precondition(count > 0, "a round asks a sentinel")
        let start = ((first % count) + count) % count
        order = (0..<count).map { (start + $0) % count }
    }

    /// The first sentinel to ask.
    public var start: Next {
        .ask(order[0])
    }

    /// The sentinel asked last said `lookup`.
    public mutating func heard(_ lookup: MasterLookup) -> Next {
        switch lookup {
        case .master(let address):
            return .found(address, sentinel: order[position])
        case .unknownName:
            unknownName += 1
        case .unanswered:
            unanswered += 1
        }
        position += 1
        guard position < order.count else { return .noMaster(unknownName: unknownName, unanswered: unanswered) }
        return .ask(order[position])
    }
}
