/// `store.timeoutMilliseconds` against `limits.tokenWaitSeconds`: a request waits at most
/// `tokenWaitSeconds` for its identity's token, and the fetch it waits for may first wait that
/// long for a Redis that hangs (the first read of the shared entry) before it goes on without
/// Redis and asks the token endpoint. A Redis timeout near the token wait leaves the token request
/// no time: the first request after a start or a reload fails (a 503 blaming the token endpoint)
/// although the endpoint would have answered. Half the wait at most leaves the other half to the
/// token request; Redis itself answers in milliseconds, so a sensible timeout is far below either.
struct StoreTimeoutCheck {
    let context: DecodingContext

    /// Why `timeoutMilliseconds` is refused beside `tokenWaitSeconds`, or nil when it fits.
    static func refusal(timeoutMilliseconds: Int, tokenWaitSeconds: Double) -> String? {
        guard Double(timeoutMilliseconds) * 2 > tokenWaitSeconds * 1000 else { return nil }
        let wait = tokenWaitSeconds == tokenWaitSeconds.rounded() ? String(Int(tokenWaitSeconds)) : String(tokenWaitSeconds)
        return "\(timeoutMilliseconds) ms is more than half of limits.tokenWaitSeconds (\(wait) s): a request waits at most "
            + "that long for its token, and the token's fetch may first wait this long for a Redis that does not answer; "
            + "lower it (Redis answers within milliseconds) or raise limits.tokenWaitSeconds"
    }

    /// Reports the refusal at `store.timeoutMilliseconds` (`storeField`: the `store` object).
    func check(_ config: RelayConfig, storeField: Field) {
        guard let redis = config.store?.redis,
              let message = Self.refusal(timeoutMilliseconds: redis.timeoutMilliseconds, tokenWaitSeconds: config.limits.tokenWaitSeconds),
              case .object(let members) = storeField.value.kind,
              let member = members.first(where: { $0.key == "timeoutMilliseconds" }) else { return }
        context.report(message, at: Field(value: member.value, path: storeField.path.key("timeoutMilliseconds")))
    }
}
