// The web page's accounts: the admin and the viewers, each with a PBKDF2-SHA256 hash of their password, kept in
// `web-accounts.json` in the hub's state directory (mode 0600), and the one-time setup code in `web-setup-code`
// while no admin password is set. Read again whenever the file changes, so `hearthd web reset-password`, run beside a
// running hub, takes effect at once (and ends the admin's sessions).
import HearthCrypto
import HearthJSON
import HearthSync
#if canImport(Glibc)
import Glibc
#endif

/// What a signed-in person may do.
public enum WebRole: String, Sendable {
    /// Sees everything, changes devices, manages viewers.
    case admin
    /// Sees everything, changes nothing.
    case viewer
}

/// One account and its password's hash.
struct WebAccount: Sendable, Equatable {
    var name: String
    var role: WebRole
    var iterations: Int
    var salt: [UInt8]
    var hash: [UInt8]

    /// OWASP's figure for PBKDF2-HMAC-SHA256 (2023). A login costs that much CPU once, on a queue of its own.
    static let iterations = 600_000
    static let outputByteCount = 32

    static func make(name: String, role: WebRole, password: String, iterations: Int = WebAccount.iterations)
        throws(CryptoError) -> WebAccount {
        let salt = try WebCrypto.randomBytes(16)
        let hash = try WebCrypto.pbkdf2SHA256(password: Array(password.utf8), salt: salt, iterations: iterations,
                                              outputByteCount: outputByteCount)
        return WebAccount(name: name, role: role, iterations: iterations, salt: salt, hash: hash)
    }

    /// Whether `password` is this account's, compared in constant time.
    func verifies(_ password: String) -> Bool {
        guard
            let derived = try? WebCrypto.pbkdf2SHA256(
                password: Array(password.utf8), salt: salt, iterations: iterations,
                outputByteCount: hash.count)
        else { return false }
        return WebCrypto.constantTimeEqual(derived, hash)
    }

    var json: JSON {
        .object([
            ("name", .string(name)), ("role", .string(role.rawValue)), ("kdf", .string("pbkdf2-sha256")),
            ("iterations", .int(iterations)), ("salt", .string(Hex.encode(salt))), ("hash", .string(Hex.encode(hash)))
        ])
    }

    init(name: String, role: WebRole, iterations: Int, salt: [UInt8], hash: [UInt8]) {
        self.name = name
        self.role = role
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    init?(_ json: JSON) {
        guard case .string(let name)? = json["name"], case .string(let r)? = json["role"],
            let role = WebRole(rawValue: r),
            json["kdf"] == .string("pbkdf2-sha256"), case .int(let iterations)? = json["iterations"], iterations > 0,
            case .string(let s)? = json["salt"], let salt = Hex.decode(s),
            case .string(let h)? = json["hash"], let hash = Hex.decode(h), !hash.isEmpty
        else { return nil }
        self.init(name: name, role: role, iterations: iterations, salt: salt, hash: hash)
    }
}

/// A problem with the accounts' files, said precisely.
public struct WebAccountsError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The accounts file and the setup code, in one directory.
public final class WebAccounts: Sendable {
    public let directory: String
    public var file: String { directory + "/web-accounts.json" }
    public var setupCodeFile: String { directory + "/web-setup-code" }
    private let cache = Locked<(stamp: FileStamp?, accounts: [WebAccount])>((nil, []))
    /// PBKDF2's iteration count for new hashes (lower only in tests of the server's paths).
    let iterations: Int

    public convenience init(directory: String) {
        self.init(directory: directory, iterations: WebAccount.iterations)
    }

    init(directory: String, iterations: Int) {
        self.directory = directory
        self.iterations = iterations
    }

    /// The accounts as the file holds them now (read again only when it changed).
    func accounts() throws(WebAccountsError) -> [WebAccount] {
        let stamp = FileStamp(file)
        if let cached = cache.withLock({ $0.stamp == stamp && stamp != nil ? $0.accounts : nil }) { return cached }
        guard let stamp else {
            cache.withLock { $0 = (nil, []) }
            return []
        }
        guard let bytes = readFile(file) else { throw WebAccountsError("cannot read \(file): \(errnoText())") }
        guard case .array(let entries)? = try? JSON.parse(bytes)["accounts"] else {
            throw WebAccountsError("\(file) is not an object with an array of accounts; move it away to start again")
        }
        var accounts: [WebAccount] = []
        for (i, e) in entries.enumerated() {
            guard let a = WebAccount(e) else {
                throw WebAccountsError("\(file): account \(i + 1) is not a name, a role and a pbkdf2-sha256 hash")
            }
            accounts.append(a)
        }
        cache.withLock { $0 = (stamp, accounts) }
        return accounts
    }

    func save(_ accounts: [WebAccount]) throws(WebAccountsError) {
        let bytes = JSON.object([("accounts", .array(accounts.map(\.json)))]).bytes
        try writeAtomically(file, bytes)
        cache.withLock { $0 = (FileStamp(file), accounts) }
    }

    /// Whether an admin password is set.
    public func hasAdmin() throws(WebAccountsError) -> Bool {
        try accounts().contains { $0.role == .admin }
    }

    /// The setup code, made and written if there is none yet; nil once an admin password is set.
    public func setupCode() throws(WebAccountsError) -> String? {
        guard try !hasAdmin() else { return nil }
        if let code = try writtenSetupCode() { return code }
        return try newSetupCode()
    }

    /// The setup code the hub wrote, if any (`hearthd web setup-code`: reads, never writes).
    public func writtenSetupCode() throws(WebAccountsError) -> String? {
        guard try !hasAdmin(), let bytes = readFile(setupCodeFile) else { return nil }
        let code = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        return code.count >= 12 ? code : nil
    }

    /// Writes a new setup code (12 characters of an alphabet without look-alikes, in groups of four).
    func newSetupCode() throws(WebAccountsError) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        guard let random = try? WebCrypto.randomBytes(12) else {
            throw WebAccountsError("libcrypto gave no random bytes")
        }
        var code = ""
        for (i, b) in random.enumerated() {
            if i > 0 && i % 4 == 0 { code += "-" }
            code.append(alphabet[Int(b) % alphabet.count])  // 256 is a multiple of 32: no bias
        }
        try writeAtomically(setupCodeFile, Array((code + "\n").utf8))
        return code
    }

    /// Whether `code` is the current setup code (constant time; dashes and case ignored).
    func checkSetupCode(_ code: String) -> Bool {
        guard let bytes = readFile(setupCodeFile) else { return false }
        func normal(_ s: String) -> [UInt8] { Array(s.uppercased().filter { $0.isLetter || $0.isNumber }.utf8) }
        let expected = normal(String(decoding: bytes, as: UTF8.self))
        return expected.count >= 12 && WebCrypto.constantTimeEqual(normal(code), expected)
    }

    /// Forgets the admin's password and makes a new setup code (`hearthd web reset-password`); the viewers stay.
    public func resetAdmin() throws(WebAccountsError) -> String {
        try save(try accounts().filter { $0.role != .admin })
        return try newSetupCode()
    }

    /// Sets the admin password with the setup code, which is then used up.
    func setUp(password: String) throws(WebAccountsError) {
        let admin: WebAccount
        do throws(CryptoError) {
            admin = try WebAccount.make(name: "admin", role: .admin, password: password, iterations: iterations)
        } catch { throw WebAccountsError("\(error)") }
        try save(try accounts().filter { $0.name != "admin" } + [admin])
        unlink(setupCodeFile)
    }

    func replace(_ account: WebAccount) throws(WebAccountsError) {
        var all = try accounts()
        if let i = all.firstIndex(where: { $0.name == account.name }) { all[i] = account } else { all.append(account) }
        try save(all)
    }

    func remove(_ name: String) throws(WebAccountsError) -> Bool {
        let all = try accounts()
        guard all.contains(where: { $0.name == name }) else { return false }
        try save(all.filter { $0.name != name })
        return true
    }

    private func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(WebAccountsError) {
        mkdir(directory, 0o750)
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WebAccountsError("cannot write \(temporary): \(errnoText())") }
        // Written by `hearthd web reset-password` as root: the hub's user, who owns the directory, must read it.
        var dir = stat()
        if geteuid() == 0, stat(directory, &dir) == 0 { _ = fchown(fd, dir.st_uid, dir.st_gid) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                close(fd)
                throw WebAccountsError("cannot write \(temporary): \(errnoText())")
            }
            written += n
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            throw WebAccountsError("cannot save \(path): \(errnoText())")
        }
    }
}

/// A file's identity and modification time: whether it changed since it was read.
struct FileStamp: Equatable, Sendable {
    var inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int
    init?(_ path: String) {
        var s = stat()
        guard stat(path, &s) == 0 else { return nil }
        inode = UInt64(s.st_ino)
        size = Int64(s.st_size)
        seconds = s.st_mtim.tv_sec
        nanoseconds = s.st_mtim.tv_nsec
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }

/// A small file's bytes (at most 1 MiB); nil when it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while out.count < 1 << 20 {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { return nil }
        if n == 0 { break }
        out += buffer[0..<n]
    }
    return out
}
