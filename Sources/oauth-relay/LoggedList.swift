// LoggedList: a list of routes or identities as the start-up and reload log lines carry it.
//
// Up to `fullLength` entries are listed in full. A longer list keeps its first `fullLength`
// entries and ends with "… and N more": with 10,000 routes, describing and writing every route
// was 12% of a reload's CPU (perf, bench/config-scale.sh), and a line no one reads.

import Logging

enum LoggedList {
    /// The most entries a log line lists one by one.
    static let fullLength = 20

    /// The first `fullLength` entries described, and the count of those left out when there are any.
    static func metadata<Entry>(_ entries: some Collection<Entry>,
                                describe: (Entry) -> String) -> Logger.MetadataValue {
        var listed: [Logger.MetadataValue] = entries.prefix(fullLength).map { .string(describe($0)) }
        if entries.count > fullLength {
            listed.append(.string("… and \(entries.count - fullLength) more"))
        }
        return .array(listed)
    }
}
