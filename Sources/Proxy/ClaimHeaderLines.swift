import Config
import JOSE
import JSON

/// The header lines that pass a verified caller's claims on to the upstream (`inbound.claimHeaders`),
/// rendered once per token and kept with it. Pure. A claim the token lacks sends nothing (the
/// client's own field of that name is removed either way: `RoutePlan.replacedNames`); a value
/// that cannot be one header line safely is withheld, and only its claim's name is told.
enum ClaimHeaderLines {
    /// Why a claim present in the token is not sent.
    enum Withholding: Equatable {
        /// A control character (CR, LF, NUL, tab, DEL...) would split the head or smuggle a field.
        case controlCharacter
        /// An object, `null`, or an array holding other than strings.
        case notRepresentable
        /// Empty (an empty string or array, or an empty item of an array): a field without a
        /// value reads as no claim to some upstreams and as a claim to others.
        case empty
        /// Space or tab at the start or end (of the value or of an array item): a parser drops
        /// them (RFC 9110 §5.5), so the upstream would see another value than the token's.
        case surroundingWhitespace
        /// An array item holding `,`: joined with `, `, it would read as two items.
        case commaInArrayItem

        /// Why, for the log line (never the value).
        var description: String {
            switch self {
            case .controlCharacter: "its value holds a control character"
            case .notRepresentable: "it is not a string, a number, a boolean or an array of strings"
            case .empty: "its value (or an item of it) is empty"
            case .surroundingWhitespace: "its value (or an item of it) starts or ends with a space or tab"
            case .commaInArrayItem: "an item of its array holds a comma"
            }
        }
    }

    struct Rendered: Equatable {
        /// `Name: value\r\n` for each claim sent, in the configuration's order.
        var lines: [UInt8] = []
        var withheld: [(claim: String, why: Withholding)] = []

        static func == (a: Rendered, b: Rendered) -> Bool {
            a.lines == b.lines && a.withheld.map(\.claim) == b.withheld.map(\.claim) && a.withheld.map(\.why) == b.withheld.map(\.why)
        }
    }

    static func render(_ claims: JWTClaims, as headers: [ClaimHeader]) -> Rendered {
        var rendered = Rendered()
        for entry in headers {
            guard let value = claims[entry.claim] else { continue }
            switch text(of: value) {
            case .success(let text):
                rendered.lines.append(contentsOf: entry.header.utf8)
                rendered.lines.append(contentsOf: ": ".utf8)
                rendered.lines.append(contentsOf: text.utf8)
                rendered.lines.append(contentsOf: "\r\n".utf8)
            case .failure(let why):
                rendered.withheld.append((entry.claim, why.withholding))
            }
        }
        return rendered
    }

    /// A claim's value as header text: a string as it is, a number or boolean as JSON writes it, an
    /// array of strings joined with ", ". Withheld: a value a header line would carry otherwise
    /// than the token does (control characters, nothing, spaces a parser trims, an item that
    /// reads as two).
    static func text(of value: JSONValue) -> Result<String, WithheldValue> {
        let text: String
        switch value {
        case .string(let string):
            if let why = withholding(string) { return .failure(WithheldValue(why)) }
            text = string
        case .integer, .number, .bool: text = value.serialized
        case .array(let values):
            guard let strings = value.strings, strings.count == values.count else { return .failure(WithheldValue(.notRepresentable)) }
            guard !strings.isEmpty else { return .failure(WithheldValue(.empty)) }
            for item in strings {
                if let why = withholding(item) { return .failure(WithheldValue(why)) }
                if item.utf8.contains(UInt8(ascii: ",")) { return .failure(WithheldValue(.commaInArrayItem)) }
            }
            text = strings.joined(separator: ", ")
        case .object, .null:
            return .failure(WithheldValue(.notRepresentable))
        }
        return .success(text)
    }

    /// Why one string (a value or an array item) cannot be sent as it is; nil: it can.
    private static func withholding(_ string: String) -> Withholding? {
        let bytes = string.utf8
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { return .controlCharacter }
        guard let first = bytes.first, let last = bytes.last else { return .empty }
        // Tabs are control characters, refused above: only spaces are left to look for.
        guard first != 0x20 && last != 0x20 else { return .surroundingWhitespace }
        return nil
    }

    struct WithheldValue: Error, Equatable {
        let withholding: Withholding
        init(_ withholding: Withholding) { self.withholding = withholding }
    }
}
