/// Day counts of the proleptic Gregorian calendar, for the dates IdPs and APIs write (an
/// HTTP-date's `Retry-After`, GitHub's RFC 3339 `expires_at`).
enum CalendarDays {
    /// Days from 1970-01-01 to a date (H. Hinnant's `days_from_civil`).
    static func since1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The days of `month` (1...12) in `year`.
    static func inMonth(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
