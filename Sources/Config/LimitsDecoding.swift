/// Reads `limits`: timeouts in seconds and counts, each checked against its range.
struct LimitsDecoding {
    let context: DecodingContext

    func decodeLimits(_ field: Field) -> Limits? {
        let secondsKeys: [(String, WritableKeyPath<Limits, Double>)] = [
            ("headerTimeoutSeconds", \.headerTimeoutSeconds),
            ("idleTimeoutSeconds", \.idleTimeoutSeconds),
            ("upstreamConnectTimeoutSeconds", \.upstreamConnectTimeoutSeconds),
            ("upstreamResponseTimeoutSeconds", \.upstreamResponseTimeoutSeconds),
            ("shutdownGraceSeconds", \.shutdownGraceSeconds),
            ("dnsCacheSeconds", \.dnsCacheSeconds),
            ("tokenWaitSeconds", \.tokenWaitSeconds),
            ("requestBodyTimeoutSeconds", \.requestBodyTimeoutSeconds),
            ("upstreamQueueTimeoutSeconds", \.upstreamQueueTimeoutSeconds),
        ]
        let countKeys: [(String, WritableKeyPath<Limits, Int>, ClosedRange<Int>, String)] = [
            ("maxHeaderBytes", \.maxHeaderBytes, 1...(1 << 24), "a positive number of bytes"),
            ("maxHeaderCount", \.maxHeaderCount, 1...100_000, "a positive count"),
            ("maxResponseHeaderBytes", \.maxResponseHeaderBytes, 1...(1 << 24), "a positive number of bytes"),
            ("maxIdleUpstreamConnections", \.maxIdleUpstreamConnections, 0...1_000_000, "a count (0 disables pooling)"),
            ("maxConnections", \.maxConnections, 0...10_000_000, "a count (0: from the file-descriptor limit)"),
            ("maxUpstreamConnections", \.maxUpstreamConnections, 0...1_000_000, "a count (0: no limit)"),
            ("requestBodyMinBytesPerSecond", \.requestBodyMinBytesPerSecond, 1...(1 << 30), "a positive number of bytes per second"),
            ("credentialFilePollSeconds", \.credentialFilePollSeconds, 1...3600, "whole seconds from 1 to 3600"),
        ]
        // Bounds that are off unless set.
        let optionalSecondsKeys: [(String, WritableKeyPath<Limits, Double?>)] = [
            ("upstreamResponseTotalSeconds", \.upstreamResponseTotalSeconds),
        ]
        let knownKeys = secondsKeys.map(\.0) + optionalSecondsKeys.map(\.0) + countKeys.map(\.0)
        guard let object = ObjectReader(field, knownKeys: knownKeys, in: context) else { return nil }
        var limits = Limits()
        for (key, property) in secondsKeys {
            if let value = object.seconds(key) { limits[keyPath: property] = value }
        }
        for (key, property) in optionalSecondsKeys {
            if let value = object.seconds(key) { limits[keyPath: property] = value }
        }
        for (key, property, range, rangeDescription) in countKeys {
            if let value = object.field(key).flatMap({ context.integer($0, in: range, rangeDescription: rangeDescription) }) {
                limits[keyPath: property] = value
            }
        }
        return limits
    }
}
