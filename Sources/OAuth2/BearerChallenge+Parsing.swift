import HTTPFields

extension BearerChallenge {
    /// The greatest `max_age` read from a challenge (10^9 s); a greater one counts as absent.
    public static let maxAgeLimit = 1_000_000_000

    /// The first `Bearer` or `DPoP` challenge in `values` (the `WWW-Authenticate` field values
    /// in order); nil when there is none or it cannot be read.
    ///
    /// A challenge that breaks RFC 7235 §4.1's syntax (a parameter without a value, an
    /// unterminated quoted string, text where a comma should be, a `token68` where RFC 6750
    /// wants parameters) is skipped whole, and the next one is read: an upstream's typo in one
    /// scheme does not hide its other challenges. So is one that names a parameter twice, in any
    /// case (RFC 7235 §2.1: each name only once per challenge).
    public static func parse(_ values: [String]) -> BearerChallenge? {
        for value in values {
            for challenge in ChallengeList.challenges(in: value) where isReadable(challenge) {
                return BearerChallenge(challenge)
            }
        }
        return nil
    }

    /// Every `Bearer` and `DPoP` challenge in `values`, in order, each read as `parse` reads the
    /// first; the ones `parse` skips are left out.
    public static func parseAll(_ values: [String]) -> [BearerChallenge] {
        values.flatMap { ChallengeList.challenges(in: $0).filter(isReadable).map(BearerChallenge.init) }
    }

    /// A `Bearer` or `DPoP` challenge with parameters (or none) and its syntax whole.
    private static func isReadable(_ challenge: ChallengeList.Challenge) -> Bool {
        let scheme = challenge.scheme.lowercased()
        return (scheme == "bearer" || scheme == "dpop") && !challenge.broken && challenge.token68 == nil
    }

    /// The tokens of a space-separated `scope` or `acr_values` (empty: none sent); nil when one
    /// holds a character outside RFC 6749 §3.3's `scope-token` (%x21 / %x23-5B / %x5D-7E).
    static func scopeTokens(_ text: String?) -> [String]? {
        guard let text else { return [] }
        let tokens = text.split(separator: " ")
        guard tokens.allSatisfy({ $0.utf8.allSatisfy(isScopeTokenCharacter) }) else { return nil }
        return tokens.map(String.init)
    }

    private static func isScopeTokenCharacter(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
    }

    private init(_ challenge: ChallengeList.Challenge) {
        let parameters = challenge.parameters
        let scope = Self.scopeTokens(parameters["scope"]), acrValues = Self.scopeTokens(parameters["acr_values"])
        // More than `maxAgeLimit` (about 31 years) is no age anyone means: treated as absent,
        // so no arithmetic on it can overflow.
        let maxAge = parameters["max_age"].flatMap { text in
            text.utf8.allSatisfy(ASCII.isDigit) ? Int(text).flatMap { $0 <= Self.maxAgeLimit ? $0 : nil } : nil
        }
        self.init(scheme: challenge.scheme, realm: parameters["realm"], resourceMetadata: parameters["resource_metadata"],
                  error: parameters["error"], errorDescription: parameters["error_description"], scope: scope ?? [],
                  acrValues: acrValues ?? [], maxAge: maxAge)
        malformedScopeTokens = scope == nil || acrValues == nil
    }
}

/// RFC 7235 §4.1's `1#challenge`: the challenges of one `WWW-Authenticate` value, read as bytes.
/// Commas separate both challenges and a challenge's parameters, so an item `name=value` belongs
/// to the challenge before it, and any other token starts a new challenge.
enum ChallengeList {
    struct Challenge {
        /// As sent.
        var scheme: String
        /// Names lowercased; values unquoted (a name given twice breaks the challenge).
        var parameters: [String: String] = [:]
        var token68: String?
        /// Something in it broke the syntax: it is not used.
        var broken = false
    }

    static func challenges(in value: String) -> [Challenge] {
        var reader = Reader(bytes: Array(value.utf8))
        var challenges: [Challenge] = []
        while true {
            reader.skip { $0 == UInt8(ascii: ",") || isSpace($0) }
            guard !reader.atEnd else { break }
            let itemStart = reader.index
            let name = reader.token()
            guard !name.isEmpty else {
                // Not a token: the current challenge is broken up to the next comma.
                markBroken(&challenges)
                reader.skipItem()
                continue
            }
            let afterName = reader.index
            reader.skip(isSpace)
            if reader.peek == UInt8(ascii: "=") {
                reader.index = itemStart
                readParameter(&reader, into: &challenges)
                continue
            }
            // A new challenge: its scheme, then a token68, parameters (the next items), or nothing.
            challenges.append(Challenge(scheme: String(decoding: name, as: UTF8.self)))
            guard reader.index > afterName, !reader.atEnd, reader.peek != UInt8(ascii: ",") else { continue }
            let paramsStart = reader.index
            if let token68 = reader.token68() {
                challenges[challenges.count - 1].token68 = token68
            } else {
                reader.index = paramsStart
                readParameter(&reader, into: &challenges)
            }
        }
        return challenges
    }

    /// One `token BWS "=" BWS ( token / quoted-string )` item, for the last challenge; a broken
    /// one breaks that challenge and is skipped to the next comma.
    private static func readParameter(_ reader: inout Reader, into challenges: inout [Challenge]) {
        let name = String(decoding: reader.token(), as: UTF8.self).lowercased()
        reader.skip(isSpace)
        guard !name.isEmpty, reader.take(UInt8(ascii: "=")) else {
            markBroken(&challenges)
            reader.skipItem()
            return
        }
        reader.skip(isSpace)
        let value: String?
        if reader.peek == UInt8(ascii: "\"") {
            value = reader.quotedString()
        } else {
            let token = reader.token()
            value = token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
        }
        reader.skip(isSpace)
        guard let value, reader.atEnd || reader.peek == UInt8(ascii: ","), !challenges.isEmpty,
              challenges[challenges.count - 1].token68 == nil else {
            markBroken(&challenges)
            reader.skipItem()
            return
        }
        // RFC 7235 §2.1: a name only once per challenge; which of two values was meant, nobody knows.
        if challenges[challenges.count - 1].parameters[name] != nil { markBroken(&challenges) }
        challenges[challenges.count - 1].parameters[name] = value
    }

    private static func markBroken(_ challenges: inout [Challenge]) {
        if !challenges.isEmpty { challenges[challenges.count - 1].broken = true }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// RFC 9110 §11.2 `token68` characters, before the `=` padding.
    static func isToken68Character(_ byte: UInt8) -> Bool {
        ASCII.isAlphanumeric(byte) || "-._~+/".utf8.contains(byte)
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func skip(_ predicate: (UInt8) -> Bool) {
            while let byte = peek, predicate(byte) { index += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        mutating func token() -> ArraySlice<UInt8> {
            let start = index
            skip(ASCII.isTokenCharacter)
            return bytes[start..<index]
        }

        /// A `token68` that is the whole rest of the challenge (spaces, then a comma or the end,
        /// after it); nil, with the position left anywhere, otherwise.
        mutating func token68() -> String? {
            let start = index
            skip(ChallengeList.isToken68Character)
            guard index > start else { return nil }
            skip { $0 == UInt8(ascii: "=") }
            let end = index
            skip(ChallengeList.isSpace)
            guard atEnd || peek == UInt8(ascii: ",") else { return nil }
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }

        /// A quoted string, unescaped; nil when it is not terminated or holds (or escapes) a
        /// control character or DEL. A broken one is still read to its closing quote (a
        /// backslash taking the byte after it, whatever it is), so that what follows is read
        /// from outside the string: text inside it is never taken for items or challenges.
        mutating func quotedString() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var value: [UInt8] = []
            var broken = false
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return broken ? nil : String(decoding: value, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { return nil }
                    index += 1
                    if Self.isQuotedText(escaped) { value.append(escaped) } else { broken = true }
                case _ where Self.isQuotedText(byte):
                    value.append(byte)
                default:
                    broken = true
                }
            }
            return nil
        }

        /// RFC 9110 §5.6.4: HTAB, SP, visible ASCII and obs-text (bytes of UTF-8 text).
        private static func isQuotedText(_ byte: UInt8) -> Bool {
            byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
        }

        /// To the next comma outside a quoted string (or the end).
        mutating func skipItem() {
            var quoted = false
            while let byte = peek {
                if quoted {
                    if byte == UInt8(ascii: "\\") { index += 1 } else if byte == UInt8(ascii: "\"") { quoted = false }
                } else if byte == UInt8(ascii: "\"") {
                    quoted = true
                } else if byte == UInt8(ascii: ",") {
                    return
                }
                index += 1
            }
        }
    }
}
