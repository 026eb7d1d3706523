// Signed-in sessions (in memory: a hub restart signs everyone out) and the login rate limit.
import HearthCrypto
import HearthSync

/// One signed-in browser: whose, until when, and the hash its password had then (a changed or reset password ends it).
struct WebSession: Sendable {
    var user: String
    var role: WebRole
    var passwordHash: [UInt8]
    var expires: Int64
}

/// The sessions of the hub's page, by a random token the browser holds in an `HttpOnly; SameSite=Strict` cookie.
/// The cookie is `<id>.<secret>`: the id finds the session, the secret is compared in constant time.
final class WebSessions: Sendable {
    /// A session lasts a week from sign-in; the cookie's `Max-Age` says the same.
    static let lifetime: Int64 = 7 * 24 * 3600 * 1000
    /// Beyond this many, the oldest session ends (a script that signs in in a loop cannot fill the memory).
    static let maximum = 64
    private struct Entry { var secret: [UInt8]; var session: WebSession }
    private let entries = Locked<[String: Entry]>([:])
    let now: @Sendable () -> Int64

    /// - Parameter now: milliseconds on a monotonic clock.
    init(now: @escaping @Sendable () -> Int64) { self.now = now }

    /// A new session; the cookie value.
    func start(_ session: WebSession) throws(CryptoError) -> String {
        let id = Hex.encode(try WebCrypto.randomBytes(8)), secret = try WebCrypto.randomBytes(24)
        var s = session
        s.expires = now() + Self.lifetime
        let entry = Entry(secret: secret, session: s)
        entries.withLock { e in
            if e.count >= Self.maximum, let oldest = e.min(by: { $0.value.session.expires < $1.value.session.expires })
            {
                e.removeValue(forKey: oldest.key)
            }
            e[id] = entry
        }
        return id + "." + Hex.encode(secret)
    }

    /// The session a cookie value names, if it is live.
    func session(_ token: String) -> WebSession? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let secret = Hex.decode(String(parts[1])) else { return nil }
        let id = String(parts[0]), t = now()
        return entries.withLock { e -> WebSession? in
            guard let entry = e[id] else { return nil }
            guard entry.session.expires > t else {
                e.removeValue(forKey: id)
                return nil
            }
            return WebCrypto.constantTimeEqual(secret, entry.secret) ? entry.session : nil
        }
    }

    func end(_ token: String) {
        guard let id = token.split(separator: ".").first else { return }
        _ = entries.withLock { $0.removeValue(forKey: String(id)) }
    }

    /// Ends every session of `user` (its password changed, or it was removed).
    func end(user: String) {
        entries.withLock { e in e = e.filter { $0.value.session.user != user } }
    }

    var count: Int { entries.withLock { $0.count } }
}

/// Failed sign-ins, per client address: after `free` failures in a row each further attempt waits twice as long as
/// the last (1 s, 2 s, 4 s … at most 15 minutes), whatever the password. A success forgets the address.
struct LoginRateLimit {
    static let free = 5
    static let maximumDelay: Int64 = 15 * 60 * 1000
    private var failures: [String: (count: Int, until: Int64)] = [:]

    /// Milliseconds the address must still wait, or 0.
    func wait(_ address: String, now: Int64) -> Int64 {
        guard let f = failures[address] else { return 0 }
        return max(0, f.until - now)
    }

    mutating func failed(_ address: String, now: Int64) {
        var f = failures[address] ?? (0, 0)
        f.count += 1
        if f.count >= Self.free {
            let delay = min(Self.maximumDelay, Int64(1000) << Int64(min(f.count - Self.free, 20)))
            f.until = now + delay
        }
        failures[address] = f
        if failures.count > 1024 { failures = failures.filter { $0.value.until > now } }  // bounded memory
    }

    mutating func succeeded(_ address: String) { failures.removeValue(forKey: address) }
}
