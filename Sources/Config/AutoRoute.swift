/// A route with `"identity": "auto"`, as `RouteDecoding` found it: its index in `routes` and
/// its `identity` key, where the problems of the identity made for it are reported.
struct AutoRoute {
    var index: Int
    var identityField: Field
}

/// Where the rules about an identity report their problems, and what they call its keys: a
/// configured identity at its key in `identities`; an identity made for `"identity": "auto"`
/// routes at the first such route's `identity`, its settings under `auto`.
enum IdentityOrigin {
    /// `identities.NAME`, reported where the `identities` object starts.
    case configured(path: JSONPath, offset: Int)
    /// The first route's `identity` key; `auto`, the top-level object, when the file has one.
    case auto(route: Field, autoObject: Field?)

    /// Where a problem with the identity as a whole is reported.
    var path: JSONPath {
        switch self {
        case .configured(let path, _): path
        case .auto(let route, _): route.path
        }
    }

    var offset: Int {
        switch self {
        case .configured(_, let offset): offset
        case .auto(let route, _): route.value.offset
        }
    }

    /// Where a problem with the setting `key` is reported: `identities.NAME.key`, or `auto.key`.
    func path(of key: String) -> JSONPath {
        switch self {
        case .configured(let path, _): path.key(key)
        case .auto: JSONPath.root.key("auto").key(key)
        }
    }

    /// Where `path(of:)` is in the file: the `identities` object, or the `auto` key itself when
    /// set, else the end of the `auto` object, else the route's `identity`.
    func offset(of key: String) -> Int {
        switch self {
        case .configured(_, let offset): return offset
        case .auto(let route, let autoObject):
            guard let autoObject else { return route.value.offset }
            if case .object(let members) = autoObject.value.kind, let member = members.first(where: { $0.key == key }) {
                return member.value.offset
            }
            return autoObject.value.lastOffset
        }
    }

    /// How a message names the setting `key`: `allowRemoteUse`, or `auto.allowRemoteUse`.
    func name(of key: String) -> String {
        switch self {
        case .configured: key
        case .auto: "auto." + key
        }
    }
}
