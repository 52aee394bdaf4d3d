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
    /// array of strings joined with ", ".
    static func text(of value: JSONValue) -> Result<String, WithheldValue> {
        let text: String
        switch value {
        case .string(let string): text = string
        case .integer, .number, .bool: text = value.serialized
        case .array(let values):
            guard let strings = value.strings, strings.count == values.count else { return .failure(WithheldValue(.notRepresentable)) }
            text = strings.joined(separator: ", ")
        case .object, .null:
            return .failure(WithheldValue(.notRepresentable))
        }
        guard text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { return .failure(WithheldValue(.controlCharacter)) }
        return .success(text)
    }

    struct WithheldValue: Error, Equatable {
        let withholding: Withholding
        init(_ withholding: Withholding) { self.withholding = withholding }
    }
}
