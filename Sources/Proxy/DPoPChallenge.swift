import HTTP1
import HTTPFields
import OAuth2

/// What an upstream's response head says about DPoP (RFC 9449 §8, §9): the nonce it wants in the
/// next proofs (`DPoP-Nonce`, on any response), and whether it refused this request for want of
/// one (`401` with a `WWW-Authenticate: DPoP error="use_dpop_nonce"` challenge). Pure functions
/// over the parsed head, so the rules are tested without sockets.
enum DPoPChallenge {
    /// The value of the head's first `DPoP-Nonce` field, if it is a valid nonce (`1*NQCHAR`).
    static func nonce(in head: HTTPHead) -> UnsafeRawBufferPointer? {
        for field in head.fields where ASCII.equalsIgnoringCase(head.name(field), nonceName) {
            let value = head.value(field)
            return DPoPNonce.isValid(value) ? value : nil
        }
        return nil
    }

    /// A 401 that asks for a DPoP nonce and brings one: the request can go again with it.
    static func asksForNonce(_ head: HTTPHead) -> Bool {
        guard head.statusCode == 401, nonce(in: head) != nil else { return false }
        return head.fields.contains { field in
            ASCII.equalsIgnoringCase(head.name(field), challengeName) && asksForNonce(challenges: head.value(field))
        }
    }

    /// Whether a `WWW-Authenticate` value holds a `DPoP` challenge with `error="use_dpop_nonce"`
    /// (RFC 9110 §11.6.1: `#challenge`, each `auth-scheme [ 1*SP ( token68 / #auth-param ) ]`,
    /// parameters `token BWS "=" BWS ( token / quoted-string )`). What does not parse is skipped
    /// up to the next comma.
    static func asksForNonce(challenges value: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var inDPoP = false
        func skip(_ bytes: (UInt8) -> Bool) {
            while index < value.count && bytes(value[index]) { index += 1 }
        }
        func token() -> UnsafeRawBufferPointer {
            let start = index
            skip(ASCII.isTokenCharacter)
            return UnsafeRawBufferPointer(rebasing: value[start..<index])
        }
        let isSpace: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        while index < value.count {
            skip { isSpace($0) || $0 == UInt8(ascii: ",") }
            let name = token()
            skip(isSpace)
            if name.isEmpty {
                // token68 padding or stray bytes: on to the next element.
                skip { $0 != UInt8(ascii: ",") }
                continue
            }
            guard index < value.count, value[index] == UInt8(ascii: "=") else {
                // A new challenge: its scheme, then (after spaces) its parameters or token68.
                inDPoP = ASCII.equalsIgnoringCase(name, scheme)
                continue
            }
            index += 1
            skip(isSpace)
            // Error codes are compared exactly (RFC 6750 §3: case-sensitive), quoted or not.
            let matches = if index < value.count && value[index] == UInt8(ascii: "\"") {
                quotedString(value, at: &index) == errorValue
            } else {
                token().elementsEqual(errorValue)
            }
            if inDPoP && matches && ASCII.equalsIgnoringCase(name, errorName) { return true }
            skip { $0 != UInt8(ascii: ",") }
        }
        return false
    }

    /// A quoted-string's content with its escapes undone, `index` past its closing quote; nil
    /// when it has none.
    private static func quotedString(_ value: UnsafeRawBufferPointer, at index: inout Int) -> [UInt8]? {
        var content: [UInt8] = []
        index += 1
        while index < value.count {
            let byte = value[index]
            index += 1
            if byte == UInt8(ascii: "\"") { return content }
            if byte == UInt8(ascii: "\\"), index < value.count {
                content.append(value[index])
                index += 1
            } else {
                content.append(byte)
            }
        }
        return nil
    }

    private static let nonceName = Array("dpop-nonce".utf8)
    private static let challengeName = Array("www-authenticate".utf8)
    private static let scheme = Array("dpop".utf8)
    private static let errorName = Array("error".utf8)
    private static let errorValue = Array("use_dpop_nonce".utf8)
}
