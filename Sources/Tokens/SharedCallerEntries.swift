// The shared store's layout for per-caller identities (`subjectTokenFrom: "caller"`), beside the
// identity's own keys (SharedEntryCommands.swift), as values (no connection):
//
//   PREFIX NAME "/caller:" HEX            one caller's entry: the same hash ("v", "e") as an
//                                         identity's, HEX the 64 hex digits of CallerEntryName
//   PREFIX NAME "/caller:" HEX ":lease"   the lease while one replica exchanges that caller's token
//   PREFIX NAME ":" FINGERPRINT ":callers"  the identity's callers' generation: 32 random hex
//                                         digits, set by the first replica that needs it, deleted by
//                                         a logout (with the identity's entry, in one script)
//
// An identity name holds neither "/" nor ":", so no caller's key is another identity's. Against a
// Redis Cluster the caller's entry is PREFIX NAME "/caller:{" HEX "}": its own hash tag, so the
// callers spread over the slots, entry and lease in one; the generation key follows the identity's
// own entry, `{NAME:FINGERPRINT}:callers`, in that entry's slot, so a logout removes both in one
// script. A caller entry is read, leased, written and released with the identity's own scripts
// (SharedEntryCommands): one protocol for both. Writes publish the caller's key on the entries'
// channel like any other.
//
// The generation key has no TTL: one short string per per-caller identity and settings, until a
// logout deletes it. A generation lost anyway (an eviction, a flushed Redis) is replaced by a new
// random one, which only makes the callers' entries unreachable: a logout's effect, never its undoing.

import RedisProtocol
import TokenStore

extension SharedEntryKeys {
    private static let callerMark = Array("/caller:".utf8)

    /// The keys of one caller's entry of `identity` (see the top of the file).
    init(prefix: String, identity: String, caller: CallerEntryName, hashTagged: Bool = false) {
        let named = Array(prefix.utf8) + Array(identity.utf8) + Self.callerMark
        entry = named + (hashTagged ? [UInt8(ascii: "{")] + caller.hex + [UInt8(ascii: "}")] : caller.hex)
        lease = entry + Array(":lease".utf8)
        channel = Self.channel(prefix: prefix)
    }

    /// The key of the identity's callers' generation, beside (and in a cluster, in the slot of)
    /// the identity's own entry; these keys must be the identity's (`init(prefix:identity:fingerprint:)`).
    var callerGeneration: [UInt8] {
        entry + Array(":callers".utf8)
    }
}

enum CallerGenerationCommands {
    /// The generation in force, set to ARGV[1] (a fresh random value) when there is none.
    static let readScript = """
        local generation = redis.call('GET', KEYS[1])
        if not generation then
          generation = ARGV[1]
          redis.call('SET', KEYS[1], generation)
        end
        return generation
        """

    /// `identityKeys`: the identity's own keys; `fresh`: the generation to set if there is none.
    static func read(_ identityKeys: SharedEntryKeys, fresh: String) -> RedisCommand {
        RedisCommand(["EVAL", .text(readScript), "1", .bytes(identityKeys.callerGeneration), .text(fresh)])
    }

    /// The generation in the script's answer; nil for anything but a non-empty text.
    static func generation(in reply: RedisReply) -> String? {
        guard let text = reply.text, !text.isEmpty else { return nil }
        return text
    }
}
