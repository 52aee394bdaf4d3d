extension RelayConfig {
    /// What `check` and `run` warn of: an `auto` object when no route has `"identity": "auto"`,
    /// so that none of its settings is used (a leftover, or a route that names another identity
    /// by mistake). Not an error: the configuration works as written.
    public var unusedAutoWarnings: [String] {
        guard auto != nil, !identities.values.contains(where: { $0.auto != nil }) else { return [] }
        return ["\(JSONPath.root.key("auto")): no route has \"identity\": \"auto\", so these settings are not used"]
    }
}
