import SafeText

/// One argument of a Redis command. A `secret` (an AUTH password) is sent as its value and shown
/// as nothing: a command's description names the command and counts its arguments only.
public enum RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral {
    case text(String)
    case bytes([UInt8])
    case integer(Int64)
    case secret(Secret)

    public init(stringLiteral value: String) {
        self = .text(value)
    }

    var wireBytes: [UInt8] {
        switch self {
        case .text(let text): Array(text.utf8)
        case .bytes(let bytes): bytes
        case .integer(let value): Array(String(value).utf8)
        case .secret(let secret): Array(secret.value.utf8)
        }
    }
}

/// A command as a RESP array of bulk strings (the only form a client sends): binary safe, so
/// encrypted entries go as they are.
public struct RedisCommand: Sendable, Equatable, CustomStringConvertible {
    public let arguments: [RedisArgument]

    public init(_ arguments: [RedisArgument]) {
        precondition(!arguments.isEmpty, "a Redis command has a name")
        self.arguments = arguments
    }

    /// `*N\r\n` then `$len\r\nbytes\r\n` per argument.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + arguments.count * 16)
        bytes += Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            let value = argument.wireBytes
            bytes += Array("$\(value.count)\r\n".utf8)
            bytes += value
            bytes += [0x0D, 0x0A]
        }
        return bytes
    }

    /// The command's name, upper-cased (`EVAL`, `AUTH`).
    public var name: String {
        guard case .text(let name) = arguments[0] else { return "?" }
        return name.uppercased()
    }

    /// Never an argument: they may be a password or an entry.
    public var description: String {
        "\(name) (\(arguments.count - 1) arguments)"
    }
}
