// Fuzz target: the RESP2 reply reader, as bytes from a Redis server (or whoever answers on its
// port) reach it.
//
// Invariants, for any bytes: nothing crashes, asserts or allocates past the limits; the input
// fed whole, fed one byte at a time, and fed in two pieces cut in its middle gives the same
// replies and the same error (or none); every reply read, written again in RESP, reads back to
// itself; an error's words never carry the input's bytes beyond the type byte.

import RedisProtocol

/// Small limits, so the fuzzer reaches each of them with short inputs.
private let limits = RESPReader.Limits(maxBulkLength: 64, maxArrayCount: 8, maxDepth: 3, maxLineLength: 32)

private func read(_ pieces: [ArraySlice<UInt8>], limits: RESPReader.Limits = limits) -> (replies: [RedisReply], error: RESPError?) {
    var reader = RESPReader(limits: limits)
    var replies: [RedisReply] = []
    do throws(RESPError) {
        for piece in pieces {
            reader.feed(Array(piece))
            while let reply = try reader.next() { replies.append(reply) }
        }
        return (replies, nil)
    } catch {
        return (replies, error)
    }
}

/// A reply as a server writes it.
private func encoded(_ reply: RedisReply) -> [UInt8] {
    switch reply {
    case .status(let text): Array("+\(text)\r\n".utf8)
    case .error(let text): Array("-\(text)\r\n".utf8)
    case .integer(let value): Array(":\(value)\r\n".utf8)
    case .bulk(let bytes): Array("$\(bytes.count)\r\n".utf8) + bytes + [13, 10]
    case .null: Array("$-1\r\n".utf8)
    case .array(let elements): Array("*\(elements.count)\r\n".utf8) + elements.flatMap(encoded)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRESPReader(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let whole = read([bytes[...]])
    let byByte = read(bytes.indices.map { bytes[$0...$0] })
    precondition(whole.replies == byByte.replies && whole.error == byByte.error, "fed byte by byte, the input reads otherwise")
    let middle = bytes.count / 2
    let halves = read([bytes[..<middle], bytes[middle...]])
    precondition(whole.replies == halves.replies && whole.error == halves.error, "cut in two, the input reads otherwise")
    for reply in whole.replies {
        // A status or error line read from invalid UTF-8 holds U+FFFD: written again it is
        // valid UTF-8 (up to three times longer, hence the default limits), and must then read
        // back unchanged.
        let again = read([encoded(reply)[...]], limits: RESPReader.Limits())
        precondition(again.error == nil && again.replies == [reply], "a reply written again reads otherwise")
    }
    if let error = whole.error {
        // No word of an error text is 12 letters long: 12 letters of the input in it were quoted.
        let words = "\(error)"
        let length = 12
        for offset in stride(from: 0, to: bytes.count - length + 1, by: 1) {
            let window = bytes[offset..<(offset + length)]
            guard window.allSatisfy({ $0 >= 0x61 && $0 <= 0x7A }) else { continue }
            precondition(!words.contains(String(decoding: window, as: UTF8.self)), "an error quotes the input")
        }
    }
    return 0
}
