/// Which key routes a command in a Redis Cluster: the node serving that key's slot must run it.
/// The relay's commands touch the keys of one identity only (they share a hash tag,
/// SharedEntryKeys), so the first key decides.
public enum ClusterRouting {
    /// The first key of `command`: `EVAL script numkeys key…`'s first key, nil when numkeys is
    /// 0; nil for the commands that have no key (`PING`, `ASKING`, `CLUSTER …`, `INFO`); else
    /// the first argument (`HMGET key …`, `GET key`, `DEL key`).
    public static func key(of command: RedisCommand) -> [UInt8]? {
        switch command.name {
        case "PING", "ASKING", "CLUSTER", "INFO", "AUTH", "SELECT", "PUBLISH", "SUBSCRIBE":
            return nil
        case "EVAL", "EVALSHA":
            guard command.arguments.count > 3, command.arguments[2].wireBytes != Array("0".utf8) else { return nil }
            return command.arguments[3].wireBytes
        default:
            return command.arguments.count > 1 ? command.arguments[1].wireBytes : nil
        }
    }

    /// The slot of `command`'s key; nil when it has none (any node may run it).
    public static func slot(of command: RedisCommand) -> ClusterSlot? {
        key(of: command).map { ClusterSlot(key: $0) }
    }
}
