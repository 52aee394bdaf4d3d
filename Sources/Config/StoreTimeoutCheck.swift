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
        guard exceedsHalf(timeoutMilliseconds: timeoutMilliseconds, tokenWaitSeconds: tokenWaitSeconds) else { return nil }
        return "\(timeoutMilliseconds) ms is more than half of limits.tokenWaitSeconds (\(seconds(tokenWaitSeconds)) s): a request waits at most "
            + "that long for its token, and the token's fetch may first wait this long for a Redis that does not answer; "
            + "lower it (Redis answers within milliseconds) or raise limits.tokenWaitSeconds"
    }

    /// Why `tokenWaitSeconds` is refused beside the default `timeoutMilliseconds` (the file does
    /// not write one), or nil when it fits: the same rule, reported at the key the file wrote.
    static func refusal(tokenWaitSeconds: Double, defaultTimeoutMilliseconds: Int) -> String? {
        guard exceedsHalf(timeoutMilliseconds: defaultTimeoutMilliseconds, tokenWaitSeconds: tokenWaitSeconds) else { return nil }
        return "\(seconds(tokenWaitSeconds)) s is less than twice store.timeoutMilliseconds (\(defaultTimeoutMilliseconds) ms, its default): "
            + "a request waits at most this long for its token, and the token's fetch may first wait that long for a Redis "
            + "that does not answer; raise it or lower store.timeoutMilliseconds"
    }

    private static func exceedsHalf(timeoutMilliseconds: Int, tokenWaitSeconds: Double) -> Bool {
        Double(timeoutMilliseconds) * 2 > tokenWaitSeconds * 1000
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// Reports the refusal at `store.timeoutMilliseconds` when the file writes it (`storeField`:
    /// the `store` object), else at `limits.tokenWaitSeconds` (`limitsField`: the `limits` object).
    func check(_ config: RelayConfig, storeField: Field, limitsField: Field?) {
        guard let redis = config.store?.redis else { return }
        if let timeout = Self.member("timeoutMilliseconds", of: storeField) {
            guard let message = Self.refusal(timeoutMilliseconds: redis.timeoutMilliseconds,
                                             tokenWaitSeconds: config.limits.tokenWaitSeconds) else { return }
            context.report(message, at: timeout)
        } else if let limitsField, let wait = Self.member("tokenWaitSeconds", of: limitsField),
                  let message = Self.refusal(tokenWaitSeconds: config.limits.tokenWaitSeconds,
                                             defaultTimeoutMilliseconds: redis.timeoutMilliseconds) {
            context.report(message, at: wait)
        }
    }

    /// The member `key` of an object field, with its path.
    private static func member(_ key: String, of field: Field) -> Field? {
        guard case .object(let members) = field.value.kind, let member = members.first(where: { $0.key == key }) else { return nil }
        return Field(value: member.value, path: field.path.key(key))
    }
}
