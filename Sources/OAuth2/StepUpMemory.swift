/// The step-up logins of one interactive identity, as its `TokenLifecycle` tracks them: the one
/// an upstream asked for and no login has answered yet, and the ones a person declined (or let
/// time out), so that an upstream repeating the same challenge does not start login after login.
///
/// Transitions: `ask` makes (or widens) the pending one; a login that brings a token meeting it
/// ends it (`met`: remembered as answered, so a challenge to that token asking the same again is
/// not answered with another login); a token that does not meet it (`unmet`: less scope granted,
/// the `acr` or `auth_time` not shown), a login the IdP ends with an error or one that times out
/// move it to the declined ones (`decline`, `expire`); a logout forgets all (`forget`). The declined ones are bounded
/// (`declinedCapacity`, oldest dropped first): an upstream cannot grow the relay's memory.
struct StepUpMemory: Sendable {
    /// How many declined step-ups are remembered.
    static let declinedCapacity = 16

    /// The step-up a login must answer, and until when it waits for one.
    struct Pending: Sendable, Equatable {
        var stepUp: StepUp
        /// After this time, with no login finishing, it counts as declined (`expire`).
        var deadline: Double
    }

    /// What makes two challenges the same: the scope as a set, the classes in order of
    /// preference, and the age.
    struct Key: Sendable, Hashable {
        var scope: [String]
        var acrValues: [String]
        var maxAge: Int?

        init(_ stepUp: StepUp) {
            scope = Set(stepUp.scope).sorted()
            acrValues = stepUp.acrValues
            maxAge = stepUp.maxAge
        }
    }

    /// The step-up the last step-up login met, and when its token arrived.
    struct Answered: Sendable, Equatable {
        var stepUp: StepUp
        var at: Double
    }

    private(set) var pending: Pending?
    /// Oldest first.
    private var declined: [Key] = []
    private(set) var answered: Answered?

    /// The pending step-up at `now` (nil when none, or when its deadline passed).
    func pending(at now: Double) -> StepUp? {
        guard let pending, now < pending.deadline else { return nil }
        return pending.stepUp
    }

    /// Whether `stepUp` asks for no more than a declined one: the same classes and age, and
    /// scopes among its scopes (a person who declined more would decline less the same way).
    func isDeclined(_ stepUp: StepUp) -> Bool {
        let key = Key(stepUp)
        return declined.contains { $0.acrValues == key.acrValues && $0.maxAge == key.maxAge && Set($0.scope).isSuperset(of: key.scope) }
    }

    /// An upstream asks for `stepUp`: it becomes the pending one, or widens it (the scopes
    /// joined, the newer classes, the shorter age), waiting `timeoutSeconds` for a login.
    /// Returns false, and changes nothing, when the joined scope would pass the limits of one
    /// (`StepUp.fitsLimits`): that challenge gets no login.
    mutating func ask(_ stepUp: StepUp, at now: Double, timeoutSeconds: Double) -> Bool {
        var asked = stepUp
        if let earlier = pending?.stepUp {
            asked.scope = StepUp.union(earlier.scope, stepUp.scope)
            if asked.acrValues.isEmpty { asked.acrValues = earlier.acrValues }
            asked.maxAge = [earlier.maxAge, stepUp.maxAge].compactMap { $0 }.min()
        }
        guard StepUp.fitsLimits(asked.scope), StepUp.fitsLimits(asked.acrValues) else { return false }
        pending = Pending(stepUp: asked, deadline: now + max(1, timeoutSeconds))
        return true
    }

    /// A login for the pending step-up starts: it has `timeoutSeconds` from now.
    mutating func loginStarted(at now: Double, timeoutSeconds: Double) {
        guard let deadline = pending?.deadline else { return }
        pending?.deadline = max(deadline, now + max(1, timeoutSeconds))
    }

    /// The pending step-up waited past its deadline: it counts as declined.
    mutating func expire(at now: Double) {
        if let pending, now >= pending.deadline { decline() }
    }

    /// The login for the pending step-up (and `also`, the step-up a login itself carried) ended
    /// without a token: remembered as declined, no longer pending.
    mutating func decline(also login: StepUp? = nil) {
        for stepUp in [pending?.stepUp, login].compactMap({ $0 }) { remember(stepUp) }
        pending = nil
    }

    /// `stepUp` joins the declined ones (the newest), the oldest dropped past the capacity.
    private mutating func remember(_ stepUp: StepUp) {
        let key = Key(stepUp)
        declined.removeAll { $0 == key }
        declined.append(key)
        if declined.count > Self.declinedCapacity { declined.removeFirst(declined.count - Self.declinedCapacity) }
    }

    /// A login that carried `stepUp` brought a token meeting it at `now`: the pending step-up it
    /// answers is over, and it is remembered as answered (`answers`).
    mutating func met(_ stepUp: StepUp, at now: Double) {
        answered = Answered(stepUp: stepUp, at: now)
        if let asked = pending?.stepUp, Self.covers(stepUp, asked) { pending = nil }
    }

    /// A login that carried `stepUp` brought a token that does not meet it: declined, so the
    /// same challenge goes to the client (the IdP would answer another login the same way).
    mutating func unmet(_ stepUp: StepUp) {
        remember(stepUp)
        if let asked = pending?.stepUp, Self.covers(stepUp, asked) { pending = nil }
    }

    /// Whether `stepUp`, asked of the token a step-up login brought, asks for nothing that login
    /// did not meet at `now`: the upstream refuses what it asked for, and another login would
    /// bring the same. A `max_age` counts only while the login is younger than it.
    func answers(_ stepUp: StepUp, at now: Double) -> Bool {
        guard let answered, Self.covers(answered.stepUp, stepUp) else { return false }
        guard let maxAge = stepUp.maxAge else { return true }
        return now - answered.at < Double(maxAge)
    }

    /// Whether a login for `login` asks for all `asked` does: the same classes and age, and at
    /// least its scopes.
    static func covers(_ login: StepUp, _ asked: StepUp) -> Bool {
        login.acrValues == asked.acrValues && login.maxAge == asked.maxAge && Set(login.scope).isSuperset(of: asked.scope)
    }

    /// A logout: nothing pending, declined or answered.
    mutating func forget() {
        pending = nil
        declined.removeAll()
        answered = nil
    }
}

/// What `TokenLifecycle.stepUp(_:at:)` made of an upstream's step-up challenge.
public enum StepUpOutcome: Sendable, Equatable {
    /// A login for it is pending: the request is answered with this login problem, as for a
    /// first login (the held token stays, unused until the login ends).
    case loginNeeded(TokenUnavailable)
    /// This step-up was declined before (or its login timed out): the upstream's answer goes to
    /// the client as it is, and no login starts.
    case declined
    /// The token was granted the scope already and nothing else is asked: a refusal like any
    /// other (`retryOnStatus`).
    case alreadyGranted

    /// A short code for metrics and logs.
    public var code: String {
        switch self {
        case .loginNeeded: "login_needed"
        case .declined: "declined"
        case .alreadyGranted: "already_granted"
        }
    }
}

extension StepUp {
    /// `scope` (space-separated, nil: none) with this step-up's scopes added after its own.
    public func widening(_ scope: String?) -> String? {
        let own = scope.map { $0.split(separator: " ").map(String.init) } ?? []
        let joined = Self.union(own, self.scope)
        return joined.isEmpty ? scope : joined.joined(separator: " ")
    }

    /// `first`'s tokens, then those of `second` not among them, each once.
    static func union(_ first: [String], _ second: [String]) -> [String] {
        var seen = Set<String>()
        return (first + second).filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// The authorization request's parameters this step-up sets besides the scope (RFC 9470
    /// §3: `acr_values`, `max_age`).
    public var authenticationParameters: [(name: String, value: String)] {
        var parameters: [(name: String, value: String)] = []
        if !acrValues.isEmpty { parameters.append(("acr_values", acrValues.joined(separator: " "))) }
        if let maxAge { parameters.append(("max_age", String(maxAge))) }
        return parameters
    }
}
