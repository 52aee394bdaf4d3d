import HTTPFields

/// The JSON path of a value, as shown in error messages: `$.routes[1].match.pathPrefix`.
/// Keys that are not plain names (letters, digits, `_`, `-`, not starting with a digit) are
/// written in brackets as JSON strings: `$.routes[0].setHeaders["X Forwarded"]`.
struct JSONPath: Equatable, CustomStringConvertible {
    private(set) var description: String

    static let root = JSONPath(description: "$")

    func key(_ key: String) -> JSONPath {
        guard Self.isPlainName(key) else {
            var escaped = ""
            for scalar in key.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case _ where scalar.value < 0x20: escaped += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            return JSONPath(description: description + "[\"" + escaped + "\"]")
        }
        return JSONPath(description: description + "." + key)
    }

    func index(_ index: Int) -> JSONPath {
        JSONPath(description: description + "[\(index)]")
    }

    private static func isPlainName(_ key: String) -> Bool {
        guard let first = key.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return key.utf8.allSatisfy { byte in
            ASCII.isAlphanumeric(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
