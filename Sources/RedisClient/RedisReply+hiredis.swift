internal import CHiredis
import RedisProtocol

extension RedisReply {
    /// A copy of a reply hiredis parsed (hiredis frees its own when the callback returns).
    init(_ reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING:
            self = .bulk(Self.bytes(value.str, value.len))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(value.integer)
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                if let element = value.element[index] { elements.append(RedisReply(element)) } else { elements.append(.null) }
            }
            self = .array(elements)
        default:
            // REDIS_REPLY_NIL (RESP2 has no other type).
            self = .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ count: Int) -> [UInt8] {
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
