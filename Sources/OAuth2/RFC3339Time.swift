/// An RFC 3339 date-time (§5.6), such as GitHub's `expires_at` (`2026-11-26T23:14:10Z`): a full
/// date, `T`, a time with optional fractional seconds, and `Z` or a `±hh:mm` offset (`t` and `z`
/// in either case). Nothing looser: no missing seconds, no space for `T`, no offset without its
/// colon, no day the month does not have.
enum RFC3339Time {
    /// Seconds since 1970 (UTC) of `text`; nil when it is not such a date-time.
    static func seconds(_ text: String) -> Double? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
              let day = scanner.digits(2), scanner.skip("T") || scanner.skip("t"),
              let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2), scanner.skip(":"),
              let second = scanner.digits(2) else { return nil }
        // 60 is a leap second (RFC 3339 §5.7).
        guard (1...12).contains(month), (1...CalendarDays.inMonth(month, of: year)).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return nil }
        var fraction = 0.0
        if scanner.skip(".") {
            guard let text = scanner.digitRun(), let value = Double("0." + text) else { return nil }
            fraction = value
        }
        let offsetSeconds: Int
        if scanner.skip("Z") || scanner.skip("z") {
            offsetSeconds = 0
        } else {
            let sign = scanner.skip("+") ? 1 : scanner.skip("-") ? -1 : 0
            guard sign != 0, let offsetHours = scanner.digits(2), scanner.skip(":"), let offsetMinutes = scanner.digits(2),
                  (0...23).contains(offsetHours), (0...59).contains(offsetMinutes) else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard scanner.atEnd else { return nil }
        let days = CalendarDays.since1970(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds) + fraction
    }

    /// Reads ASCII digits and separators from the front of a date-time.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        var atEnd: Bool { index == bytes.count }

        /// Exactly `count` digits, as a number.
        mutating func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }

        /// One or more digits, as text.
        mutating func digitRun() -> String? {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// Skips `character` when it comes next.
        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }
    }
}
