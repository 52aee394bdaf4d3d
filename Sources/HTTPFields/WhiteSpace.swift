/// Text without the white space around it, by Unicode's rules, for text a person or a server
/// wrote that is not an HTTP field (those have `ASCII.trimmingWhitespace`): a key file, an
/// `expires_in` string. The two sets are Foundation's `CharacterSet.whitespaces` and
/// `.whitespacesAndNewlines`, which these readers used before the relay dropped Foundation.
public enum WhiteSpace {
    /// Without the tabs and Unicode space separators (U+0020, U+00A0, U+2000…) around it.
    public static func trimmingSpaces(_ text: some StringProtocol) -> Substring {
        trimming(text) { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// Without the spaces and line breaks around it (Unicode's White_Space property).
    public static func trimmingSpacesAndNewlines(_ text: some StringProtocol) -> Substring {
        trimming(text) { $0.properties.isWhitespace }
    }

    private static func trimming(_ text: some StringProtocol, _ isSpace: (Unicode.Scalar) -> Bool) -> Substring {
        let scalars = Substring(text).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return Substring(scalars[first...last])
    }
}
