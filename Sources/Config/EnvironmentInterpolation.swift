import HTTPFields

/// `${NAME}` substitution in config strings.
///
/// - `${NAME}` is replaced by the variable's value; an unset variable is an error.
/// - `${NAME:-default}` uses `default` when the variable is unset or empty (as in a shell
///   or docker compose).
/// - `$${` is a literal `${`; any other `$` is kept as it is.
///
/// Substituted values are never scanned again, so a value holding `${` stays literal.
enum EnvironmentInterpolation {
    /// Whether `text` holds a `$`: most config strings do not, and searching their bytes costs a
    /// fifth of walking the String's UTF-8 view (800 instructions a string; every string of a
    /// file of 10,000 routes is asked).
    private static func mentionsDollar(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { $0.contains(UInt8(ascii: "$")) }
    }

    static func expand(_ text: String, environment: [String: String]) -> Result<String, InvalidValue> {
        guard mentionsDollar(text) else { return .success(text) }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var problems: [String] = []
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "$") else {
                output.append(bytes[index])
                index += 1
                continue
            }
            if bytes[index...].starts(with: "$${".utf8) {
                output.append(contentsOf: "${".utf8)
                index += 3
                continue
            }
            guard bytes[index...].starts(with: "${".utf8) else {
                output.append(bytes[index])
                index += 1
                continue
            }
            guard let close = bytes[(index + 2)...].firstIndex(of: UInt8(ascii: "}")) else {
                problems.append("unterminated \"${\" (write \"$${\" for a literal \"${\")")
                break
            }
            let expression = String(decoding: bytes[(index + 2)..<close], as: UTF8.self)
            switch substitute(expression, environment: environment) {
            case .success(let value): output.append(contentsOf: value.utf8)
            case .failure(let problem): problems.append(problem.message)
            }
            index = close + 1
        }
        guard problems.isEmpty else { return .failure(InvalidValue(problems.joined(separator: "; "))) }
        return .success(String(decoding: output, as: UTF8.self))
    }

    /// `message` with the value of every variable `text` refers to written back as `${NAME}`:
    /// what a file interpolates may be a key (a URL's query, a header), and an error about the
    /// resolved string must not show it in a log. Values shorter than 4 characters are left
    /// (replacing them would garble the message; they carry no secret worth the name).
    static func hidingValues(referencedBy text: String, in message: String, environment: [String: String]) -> String {
        guard text.contains("${") else { return message }
        var hidden = message
        var rest = Substring(text)
        while let start = rest.firstRange(of: "${") {
            guard let close = rest[start.upperBound...].firstIndex(of: "}") else { break }
            let expression = rest[start.upperBound..<close]
            let name = expression.firstRange(of: ":-").map { expression[..<$0.lowerBound] } ?? expression
            if let value = environment[String(name)], value.count >= 4 {
                hidden = hidden.replacing(value, with: "${\(name)}")
            }
            rest = rest[rest.index(after: close)...]
        }
        return hidden
    }

    private static func substitute(_ expression: String, environment: [String: String]) -> Result<String, InvalidValue> {
        let name: Substring
        let fallback: Substring?
        if let separator = expression.firstRange(of: ":-") {
            name = expression[..<separator.lowerBound]
            fallback = expression[separator.upperBound...]
        } else {
            name = expression[...]
            fallback = nil
        }
        guard isVariableName(name) else {
            return .failure(InvalidValue("invalid variable name in \"${\(name)}\" (expected letters, digits and _)"))
        }
        if let fallback {
            if let value = environment[String(name)], !value.isEmpty { return .success(value) }
            return .success(String(fallback))
        }
        guard let value = environment[String(name)] else {
            return .failure(InvalidValue("environment variable \(name) is not set"))
        }
        return .success(value)
    }

    private static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.utf8.first, !ASCII.isDigit(first) else { return false }
        return name.utf8.allSatisfy { ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: "_") }
    }
}
