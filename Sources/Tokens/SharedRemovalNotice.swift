// A logout announced on the entries' channel (SharedEntryCommands.remove: the entry's key,
// ":removed:" and the remover's id), as this replica hears it. Every identity whose tokens the
// replicas share is forgotten on it — a person's login and a client's token alike (a
// client-credentials identity then fetches a new token, as the replica that logged it out does) —
// except on the replica that sent it, which has forgotten already.

/// Which identity a message on the entries' channel tells this replica to forget. No I/O.
enum SharedRemovalNotice {
    /// The identity to forget on `message`: the one `identity(entry)` finds for the entry a
    /// removal names, when another replica (or `oauth-relay logout`) sent it; nil for a write's
    /// or a released lease's message, for this replica's own removal (`holder`), and for an entry
    /// of no identity in force here.
    static func identityToForget<Identity>(message: [UInt8], holder: String,
                                           identity: (_ entry: [UInt8]) -> Identity?) -> Identity? {
        guard let (entry, remover) = SharedEntryKeys.removal(in: message), remover != holder else { return nil }
        return identity(entry)
    }
}
