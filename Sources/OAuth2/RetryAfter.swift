import HTTPFields

/// `Retry-After` (RFC 9110 §10.2.3): a number of seconds, or an HTTP-date in any of the three
/// formats a recipient must accept (IMF-fixdate, RFC 850, asctime).
enum RetryAfter {
    /// Seconds to wait from `unixTime` (0 for a date in the past); nil when unparseable.
    static func seconds(_ value: String, unixTime: Double) -> Double? {
        let trimmed = WhiteSpace.trimmingSpaces(value)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(trimmed)
        }
        return httpDate(String(trimmed)).map { max(0, $0 - unixTime) }
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 of an HTTP-date: `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// `Sunday, 06-Nov-94 08:49:37 GMT` or `Sun Nov  6 08:49:37 1994`.
    static func httpDate(_ text: String) -> Double? {
        let words = text.split { $0 == " " || $0 == "," || $0 == "-" }
        guard words.count == 5 || (words.count == 6 && words[5] == "GMT") else { return nil }
        let asctime = words.count == 5
        let (dayWord, monthWord, yearWord, timeWord) = asctime
            ? (words[2], words[1], words[4], words[3])
            : (words[1], words[2], words[3], words[4])
        guard let month = months.firstIndex(of: monthWord.lowercased()).map({ $0 + 1 }),
              let day = Int(dayWord), (1...31).contains(day),
              var year = Int(yearWord), yearWord.count == 4 || yearWord.count == 2 else { return nil }
        if yearWord.count == 2 {
            year += year < 70 ? 2000 : 1900
        }
        let time = timeWord.split(separator: ":", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard time.count == 3, (0...23).contains(time[0]), (0...59).contains(time[1]), (0...60).contains(time[2]) else { return nil }
        let days = CalendarDays.since1970(year: year, month: month, day: day)
        return Double(days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2])
    }
}
