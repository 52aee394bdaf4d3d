// The shared token store's layout in Redis and the commands on it, as values (no connection):
//
//   PREFIX NAME ":" FINGERPRINT          a hash: "v" the entry's version (random, changed by every
//                                        write), "e" the entry (TokenStore's StoreEntry format:
//                                        AES-256-GCM under store.key; Redis never sees a token)
//   PREFIX NAME ":" FINGERPRINT ":lease" the holder's id while one replica fetches (SET NX PX)
//   channel PREFIX "written"             a write or a released lease publishes the entry's key; a
//                                        removal (a logout) the key + ":removed:" + the remover's id
//
// and, for an identity whose tokens are exchanged per caller, its callers' entries and their
// generation (SharedCallerEntries.swift).
//
// Against a Redis Cluster the entry's key is PREFIX "{" NAME ":" FINGERPRINT "}": the braces make
// it the hash tag of the entry and the lease alike, so both are in one slot and each script's keys
// on one node (the channel is no key: a PUBLISH reaches every node's subscribers). One server
// keeps the names above, so a fleet that moves to a newer relay reads the entries it wrote before.
//
// The key names the identity and its settings (SettingsFingerprint, 64 hex digits), so replicas
// with other settings — another client, scope or endpoint, as during a rolling update — keep
// their own entries instead of overwriting each other's. Scripts make the lease and the
// compare-and-set atomic on the server; their replies are parsed here.

import HTTPFields
import OAuth2
import RedisProtocol
import TokenStore

/// Where one identity's shared entry, lease and channel are.
struct SharedEntryKeys: Equatable {
    let entry: [UInt8]
    let lease: [UInt8]
    let channel: [UInt8]

    /// `hashTagged` (a Redis Cluster): the name and fingerprint in braces, one hash tag for all
    /// the identity's keys (neither an identity's name nor, in cluster mode, the prefix may hold a
    /// brace, so no other brace can make another tag).
    init(prefix: String, identity: String, fingerprint: SettingsFingerprint, hashTagged: Bool = false) {
        let hex = fingerprint.bytes.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return [digits[Int(byte >> 4)], digits[Int(byte & 0xf)]]
        }.joined()
        let tagged = Array(identity.utf8) + [UInt8(ascii: ":")] + hex
        entry = Array(prefix.utf8) + (hashTagged ? [UInt8(ascii: "{")] + tagged + [UInt8(ascii: "}")] : tagged)
        lease = entry + Array(":lease".utf8)
        channel = Self.channel(prefix: prefix)
    }

    static func channel(prefix: String) -> [UInt8] {
        Array(prefix.utf8) + Array("written".utf8)
    }

    private static let removedMark = Array(":removed:".utf8)
    private static let removerLength = 16

    /// The message of this entry's removal by `remover` (a replica's 16 hex digit id).
    func removal(by remover: String) -> [UInt8] {
        entry + Self.removedMark + Array(remover.utf8)
    }

    /// The entry key and remover of a removal message; nil for any other message (a write's is
    /// the key alone, which ends in 64 hex digits, never in the mark and an id).
    static func removal(in message: [UInt8]) -> (entry: [UInt8], remover: String)? {
        let idStart = message.count - removerLength
        let markStart = idStart - removedMark.count
        guard markStart > 0, message[markStart..<idStart].elementsEqual(removedMark),
              message[idStart...].allSatisfy({ ASCII.hexDigitValue($0) != nil }) else { return nil }
        return (Array(message[..<markStart]), String(decoding: message[idStart...], as: UTF8.self))
    }
}

enum SharedEntryCommands {
    /// The entry's version and bytes.
    static func read(_ keys: SharedEntryKeys) -> RedisCommand {
        RedisCommand(["HMGET", .bytes(keys.entry), "v", "e"])
    }

    /// Takes the lease unless another holder has it (its own lease is renewed), and reads the
    /// entry in the same step: {took, the lease's remaining ms, version, entry}. `took` is 1
    /// (taken), 0 (another holder's) or, given ARGV[3] (a version, "" for none), 2: the entry is no
    /// longer that version, so the lease was not asked for — the entry changed since this replica
    /// last saw it and may be all it needs (one round trip where a read and an acquire were two).
    static let acquireScript = """
        local entry = redis.call('HMGET', KEYS[1], 'v', 'e')
        if ARGV[3] and (entry[1] or '') ~= ARGV[3] then
          return {2, redis.call('PTTL', KEYS[2]), entry[1], entry[2]}
        end
        local holder = redis.call('GET', KEYS[2])
        local took = 0
        if holder == ARGV[1] then
          redis.call('PEXPIRE', KEYS[2], ARGV[2])
          took = 1
        elseif not holder then
          redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
          took = 1
        end
        return {took, redis.call('PTTL', KEYS[2]), entry[1], entry[2]}
        """

    /// `ifUnchanged`: take the lease only if the entry is still that version (SharedFetch's
    /// `acquireIfUnchanged`); nil: whatever the entry.
    static func acquire(_ keys: SharedEntryKeys, holder: String, leaseMilliseconds: Int64, ifUnchanged: EntryVersion? = nil) -> RedisCommand {
        RedisCommand(["EVAL", .text(acquireScript), "2", .bytes(keys.entry), .bytes(keys.lease), .text(holder),
                      .integer(max(1, leaseMilliseconds))] + (ifUnchanged.map { [.text($0.scriptArgument)] } ?? []))
    }

    /// Compare-and-set: stores the entry only if its version is still the one read before the
    /// fetch ("" for none), so an entry (and its refresh token) is never replaced by one obtained
    /// from an older read. Either way the holder's lease goes and the channel hears of it.
    /// {1, new version} or {0, the version found}.
    static let writeScript = """
        local current = redis.call('HGET', KEYS[1], 'v')
        local stored = 0
        if (current or '') == ARGV[1] then
          redis.call('HSET', KEYS[1], 'v', ARGV[2], 'e', ARGV[3])
          redis.call('PEXPIRE', KEYS[1], ARGV[4])
          current = ARGV[2]
          stored = 1
        end
        if redis.call('GET', KEYS[2]) == ARGV[5] then redis.call('DEL', KEYS[2]) end
        redis.call('PUBLISH', ARGV[6], KEYS[1])
        return {stored, current}
        """

    static func write(_ keys: SharedEntryKeys, expected: EntryVersion, version: String, entry: [UInt8],
                      ttlMilliseconds: Int64, holder: String) -> RedisCommand {
        RedisCommand(["EVAL", .text(writeScript), "2", .bytes(keys.entry), .bytes(keys.lease), .text(expected.scriptArgument),
                      .text(version), .bytes(entry), .integer(max(1, ttlMilliseconds)), .text(holder), .bytes(keys.channel)])
    }

    /// Gives the lease up (a fetch that found the entry good enough, or failed) and, if it was
    /// still this holder's, tells the waiters to look again.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
          redis.call('PUBLISH', ARGV[2], ARGV[3])
          return 1
        end
        return 0
        """

    static func release(_ keys: SharedEntryKeys, holder: String) -> RedisCommand {
        RedisCommand(["EVAL", .text(releaseScript), "1", .bytes(keys.lease), .text(holder), .bytes(keys.channel), .bytes(keys.entry)])
    }

    /// A logout (`DELETE /identities/NAME/token`, `oauth-relay logout`): the entry goes, and the
    /// channel says so, so every replica holding the login drops it too (a missing entry alone
    /// would not tell them: an interactive identity reads the entry only when it hears of it).
    /// The callers' generation goes in the same step (KEYS[2], in the entry's slot: a per-caller
    /// identity's callers' entries become unreachable, SharedCallerEntries.swift; for any other
    /// identity there is none). The number of entries deleted (0 or 1).
    static let removeScript = """
        local removed = redis.call('DEL', KEYS[1])
        redis.call('DEL', KEYS[2])
        redis.call('PUBLISH', ARGV[1], ARGV[2])
        return removed
        """

    static func remove(_ keys: SharedEntryKeys, by remover: String) -> RedisCommand {
        RedisCommand(["EVAL", .text(removeScript), "2", .bytes(keys.entry), .bytes(keys.callerGeneration), .bytes(keys.channel),
                      .bytes(keys.removal(by: remover))])
    }

    static let ping = RedisCommand(["PING"])

    /// `WAIT 1 T`: how many replicas have every write of this connection so far, waiting up to
    /// T ms for one: half the command timeout, so that a master without a replica answers 0
    /// before the link counts it as down, and 100 ms at most, so that such a master holds the
    /// commands behind it back no longer (a replica next to its master answers within a few).
    static func waitForReplica(timeoutMilliseconds: UInt64) -> RedisCommand {
        RedisCommand(["WAIT", "1", .integer(min(maximumReplicaWaitMilliseconds, max(1, Int64(timeoutMilliseconds / 2))))])
    }

    static let maximumReplicaWaitMilliseconds: Int64 = 100

    /// How long Redis keeps an entry: until its access token expires, or, with a refresh token,
    /// `refreshTokenRetention` (the refresh token keeps the identity going without its grant, or
    /// a person logged in). Never below a second.
    static func ttlMilliseconds(_ token: StoredToken, now unixTime: Double) -> Int64 {
        var seconds = (token.access?.expiresAt ?? unixTime) - unixTime
        if token.refreshToken != nil { seconds = max(seconds, refreshTokenRetention) }
        return Int64(max(1, seconds) * 1000)
    }

    /// 30 days.
    static let refreshTokenRetention: Double = 30 * 24 * 3600
}

/// The version of an entry as this replica last saw it.
enum EntryVersion: Equatable {
    /// Never read.
    case unknown
    case absent
    case known(String)

    init(_ version: String?) {
        self = version.map(EntryVersion.known) ?? .absent
    }

    /// What the write script compares with: "" for an entry that was not there.
    var scriptArgument: String {
        if case .known(let version) = self { return version }
        return ""
    }
}

/// An entry as read: its version and bytes, both nil when there is none.
struct SharedEntryRead: Equatable {
    var version: String?
    var entry: [UInt8]?

    /// From HMGET's [v, e]; nil for any other reply.
    init?(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count == 2 else { return nil }
        self.init(version: parts[0], entry: parts[1])
    }

    init?(version: RedisReply, entry: RedisReply) {
        switch (version, entry) {
        case (.null, _), (_, .null):
            // A hash half written cannot be (HSET sets both); anything else reads as no entry.
            self.version = nil
            self.entry = nil
        case (.bulk, .bulk):
            guard let text = version.text else { return nil }
            self.version = text
            self.entry = entry.bytes
        default:
            return nil
        }
    }

    init(version: String?, entry: [UInt8]?) {
        self.version = version
        self.entry = entry
    }
}

/// What became of the lease an acquire asked for.
enum LeaseOutcome: Equatable {
    case taken
    /// Another replica holds it.
    case heldByAnother
    /// Not asked for: the entry is no longer the version the acquire named (`ifUnchanged`).
    case entryChanged

    /// From the script's first number.
    init?(scriptCode: Int64) {
        switch scriptCode {
        case 0: self = .heldByAnother
        case 1: self = .taken
        case 2: self = .entryChanged
        default: return nil
        }
    }
}

/// The acquire script's answer.
struct LeaseAnswer: Equatable {
    var lease: LeaseOutcome
    /// How long the lease has left (ms); negative when there is none.
    var remainingMilliseconds: Int64
    var read: SharedEntryRead

    var took: Bool { lease == .taken }

    init?(_ reply: RedisReply) {
        // Redis drops trailing nils of a Lua table: [took, pttl] is a lease with no entry.
        guard let parts = reply.elements, parts.count >= 2, let took = parts[0].integer, let remaining = parts[1].integer,
              let lease = LeaseOutcome(scriptCode: took),
              let read = SharedEntryRead(version: parts.count > 2 ? parts[2] : .null, entry: parts.count > 3 ? parts[3] : .null)
        else { return nil }
        self.lease = lease
        remainingMilliseconds = remaining
        self.read = read
    }

    init(lease: LeaseOutcome, remainingMilliseconds: Int64, read: SharedEntryRead) {
        self.lease = lease
        self.remainingMilliseconds = remainingMilliseconds
        self.read = read
    }
}

/// The write script's answer.
enum WriteAnswer: Equatable {
    case stored(version: String)
    /// Another replica wrote since this one read: its entry stays.
    case conflict(current: String?)

    init?(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count >= 1, let stored = parts[0].integer else { return nil }
        let current = parts.count > 1 ? parts[1].text : nil
        if stored == 1, let current {
            self = .stored(version: current)
        } else {
            self = .conflict(current: current)
        }
    }
}
