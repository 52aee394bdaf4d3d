import OAuth2

extension RelayConfig {
    /// What `check` and `run` warn of: an identity that sends a client assertion the platform
    /// wrote (`client_assertion_file`) without `clientId`, so its token requests carry no
    /// `client_id`. Microsoft Entra ID refuses those (AADSTS900144); not an error, since other
    /// platforms know the client by the assertion's `sub`.
    public var assertionWithoutClientIdWarnings: [String] {
        identities.keys.sorted().compactMap { name in
            guard case .clientAssertion(id: nil, _) = identities[name]!.clientAuth else { return nil }
            return "\(JSONPath.root.key("identities").key(name).key("clientId")): not set, so the token requests of clientAuth "
                + "client_assertion_file carry no client_id: Microsoft Entra ID requires it (AADSTS900144); an IdP that knows "
                + "the client by the assertion's sub does not"
        }
    }
}
