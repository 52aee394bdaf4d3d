import HTTPFields

/// The JSON path of a value, as shown in error messages: `$.routes[1].match.pathPrefix`.
/// Keys that are not plain names (letters, digits, `_`, `-`, not starting with a digit) are
/// written in brackets as JSON strings: `$.routes[0].setHeaders["X Forwarded"]`.
///
/// A path is a chain of steps from the root, written out as text only when `description` is
/// asked for (a problem or a warning reported): writing the text of every member's path was 7%
/// of decoding a file of 10,000 routes (callgrind), and almost none of them is ever shown.
struct JSONPath: Equatable, CustomStringConvertible, Sendable {
    /// The last step; nil for the root.
    private let last: Step?

    /// One step after the path before it: a member's key or an element's index.
    private final class Step: Sendable {
        let parent: JSONPath
        let name: Name

        init(parent: JSONPath, name: Name) {
            self.parent = parent
            self.name = name
        }
    }

    private enum Name: Sendable {
        case key(String)
        case index(Int)
    }

    static let root = JSONPath(last: nil)

    func key(_ key: String) -> JSONPath {
        JSONPath(last: Step(parent: self, name: .key(key)))
    }

    func index(_ index: Int) -> JSONPath {
        JSONPath(last: Step(parent: self, name: .index(index)))
    }

    var description: String {
        var names: [Name] = []
        var step = last
        while let current = step {
            names.append(current.name)
            step = current.parent.last
        }
        var text = "$"
        for name in names.reversed() {
            switch name {
            case .key(let key): Self.append(key: key, to: &text)
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    static func == (lhs: JSONPath, rhs: JSONPath) -> Bool {
        lhs.description == rhs.description
    }

    private static func append(key: String, to text: inout String) {
        guard isPlainName(key) else {
            var escaped = ""
            for scalar in key.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case _ where scalar.value < 0x20: escaped += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            text += "[\"" + escaped + "\"]"
            return
        }
        text += "." + key
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
