// The web page's JSON API (docs/web-api.md): routing, sessions, the checks every change passes, and the bridge to
// the hub's request path. Independent of NIO: `WebServer` turns HTTP into `WebRequest`s and `WebReply`s back.
import Dispatch
import HearthContract
import HearthEngine
import HearthHub
import HearthCrypto
import HearthJSON
import HearthModel
import HearthMQTT
import HearthSync
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// What the server read of one request.
struct WebRequest: Sendable {
    var method: String
    var uri: String
    var host: String?
    var origin: String?
    var cookie: String?
    var contentType: String?
    /// The client's address, for the sign-in rate limit.
    var remote: String
    /// Whether the connection came from this machine (a reverse proxy, or a local script).
    var remoteIsLoopback: Bool
    var body: [UInt8]
    /// The browser's languages, for the page's.
    var acceptLanguage: String? = nil
}

/// A whole response.
struct WebResponse: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    /// Run once the response has been written (a restart that must not cut its own answer off).
    var afterWrite: (@Sendable () -> Void)? = nil
}

/// What the server sends back: a response, or a live stream of server-sent events for a session.
enum WebReply: Sendable {
    case response(WebResponse)
    case events(WebSession)
}

/// The API: every route of `docs/web-api.md`.
final class WebAPI: Sendable {
    let mqtt: MQTTHub
    let accounts: WebAccounts
    let sessions: WebSessions
    let logger: Logger
    let brokerAddress: String
    /// The hub's administration (`/api/admin/`), when the hub handed it over.
    let admin: WebAdmin?
    /// Whether the page is served over HTTPS: the session cookie is then `Secure`, never sent over plain HTTP.
    let overTLS: Bool
    /// The Matter panel's routes (`/api/admin/matter…`): the node's, or the answer that it is off.
    let matter: WebMatter
    /// Names this hub answers to besides IP literals (`Host` check against DNS rebinding).
    let hostNames: Set<String>
    private let limit = Locked(LoginRateLimit())
    /// Backup and restore, once the daemon has said where the hub's files are (`WebServer.enableBackup`).
    let backup = Locked<WebBackup?>(nil)
    /// Password hashing runs here, one at a time, never on the event loop; `kdfWaiting` bounds what waits for it.
    private let kdfQueue = DispatchQueue(label: "hearth.web.kdf")
    private let kdfWaiting = Locked(0)
    static let kdfQueueLimit = 4
    static let cookieName = "hearth_session"

    init(mqtt: MQTTHub, accounts: WebAccounts, sessions: WebSessions, brokerAddress: String, logger: Logger,
         admin: WebAdmin? = nil, matter: WebMatter? = nil, overTLS: Bool = false) {
        self.admin = admin
        self.overTLS = overTLS
        self.matter = matter ?? WebMatter(node: nil, logger: logger)
        self.mqtt = mqtt
        self.accounts = accounts
        self.sessions = sessions
        self.brokerAddress = brokerAddress
        self.logger = logger
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
        hostNames = ["localhost", host, host + ".local"]
    }

    // MARK: Routing

    func handle(_ r: WebRequest, _ done: @escaping @Sendable (WebReply) -> Void) {
        let reply: @Sendable (WebResponse) -> Void = { done(.response($0)) }
        let (path, query) = split(r.uri)
        if r.method == "GET" || r.method == "HEAD", let asset = PageAssets.asset(path, acceptLanguage: r.acceptLanguage)
        {
            return reply(asset)
        }
        guard let segments = PathReader.segments(path), segments.first == "api" else {
            return reply(Self.error(404, HomeError(.notFound, "no page at \(path)")))
        }
        if let problem = hostProblem(r) {
            return reply(
                Self.error(403, HomeError(code: .permissionDenied, status: .unsupportedAccess, message: problem)))
        }
        let changes = r.method != "GET" && r.method != "HEAD"
        if changes, let problem = changeProblem(r) { return reply(problem) }
        let route = Array(segments.dropFirst())
        switch (r.method, route) {
        case ("POST", ["login"]): return login(r, reply)
        case ("POST", ["setup"]): return setUp(r, reply)
        default: break
        }
        guard let token = r.cookie.flatMap({ CookieHeader.value(named: Self.cookieName, in: $0) }),
              let session = live(token) else {
            return reply(signInFirst())
        }
        if backupRoute(r, session, route, reply) { return }
        if matter.route(r, session, route, reply) { return }
        switch (r.method, route) {
        case ("GET", ["session"]):
            reply(Self.json(200, .object([("ok", .bool(true)), ("user", .string(session.user)),
                                          ("role", .string(session.role.rawValue))])))
        case ("POST", ["logout"]):
            sessions.end(token)
            reply(Self.json(200, .object([("ok", .bool(true))]), cookie: cookie("", maxAge: 0)))
        case ("POST", ["password"]): changePassword(r, session, reply)
        case ("GET", ["status"]): reply(Self.json(200, status(session)))
        case ("GET", ["home"]): reply(Self.raw(200, mqtt.homeView()))
        case (_, let route) where route.first == "admin":
            guard let admin else {
                return reply(Self.error(404, HomeError(.notFound, "no administration on this hub")))
            }
            admin.route(r, Array(route.dropFirst()), query: query, session: session, reply)
        case ("GET", ["traits"]): reply(Self.json(200, TraitCatalogue.json(mqtt.home.registry)))
        case ("GET", _) where route.count == 2 && route[0] == "devices":
            let id = route[1]
            guard let doc = mqtt.document(of: id) else {
                return reply(Self.error(404, HomeError(.notFound, "no device '\(id)' on this hub")))
            }
            reply(Self.raw(200, doc))
        case ("POST", _) where route.count == 3 && route[0] == "devices" && route[2] == "request":
            let id = route[1]
            guard session.role == .admin else { return reply(Self.viewerRefused()) }
            // The same request objects and responses as MQTT (`docs/mqtt-api.md`); HTTP 200 whatever the answer.
            mqtt.request(r.body, device: id) { response in reply(Self.raw(200, response.bytes)) }
        case ("GET", ["groups"]): reply(Self.raw(200, mqtt.groupsView()))
        case ("POST", _) where route.count == 3 && route[0] == "groups" && route[2] == "request":
            guard let group = Int(route[1]), (1...65535).contains(group) else {
                return reply(
                    Self.error(404, HomeError(.notFound, "no group '\(route[1])': a group is a number 1…65535")))
            }
            guard session.role == .admin else { return reply(Self.viewerRefused()) }
            // One send on `<prefix>/groups/<group>/set` for every hub with members; each hub's summary names what ran.
            mqtt.groupRequest(r.body, group: group) { summary in reply(Self.raw(200, summary.bytes)) }
        case ("GET", ["events"]): done(.events(session))
        case ("GET", ["users"]):
            guard session.role == .admin else { return reply(Self.viewerRefused()) }
            let list = ((try? accounts.accounts()) ?? []).map {
                JSON.object([("name", .string($0.name)), ("role", .string($0.role.rawValue))])
            }
            reply(Self.json(200, .object([("ok", .bool(true)), ("users", .array(list))])))
        case ("POST", ["users"]):
            guard session.role == .admin else { return reply(Self.viewerRefused()) }
            addViewer(r, reply)
        case ("DELETE", _) where route.count == 2 && route[0] == "users":
            let name = route[1]
            guard session.role == .admin else { return reply(Self.viewerRefused()) }
            guard name != "admin" else { return reply(Self.error(400, .invalidCommand("the admin cannot be removed"))) }
            do throws(WebAccountsError) {
                guard try accounts.remove(name) else {
                    return reply(Self.error(404, HomeError(.notFound, "no user '\(name)'")))
                }
                sessions.end(user: name)
                reply(Self.json(200, .object([("ok", .bool(true))])))
            } catch { reply(Self.error(500, HomeError(.failure, "\(error)"))) }
        default:
            reply(Self.error(404, HomeError(.notFound, "no API \(r.method) \(path)")))
        }
    }

    /// The answer to a request without a live session.
    func signInFirst() -> WebResponse {
        let setupNeeded = (try? accounts.hasAdmin()) == false
        return Self.json(401, .object([
            ("ok", .bool(false)), ("setupNeeded", .bool(setupNeeded)),
            ("error", Self.errorObject(HomeError(code: .unauthenticated, status: .unsupportedAccess,
                                                 message: "sign in first: POST /api/login")))]))
    }

    /// Nil when the `Cookie` header names a live admin session; otherwise what the request is answered instead.
    /// Asked when a request's head arrives on a route that takes a large body (a configuration, an archive), so only
    /// the admin's requests are read up to that size: anyone else's body is held to a device request's.
    func largeBodyRefusal(cookie: String) -> WebResponse? {
        guard let token = CookieHeader.value(named: Self.cookieName, in: cookie), let session = live(token) else {
            return signInFirst()
        }
        return session.role == .admin ? nil : Self.viewerRefused()
    }

    /// The session a cookie names, if it is live and its password has not changed since.
    func live(_ token: String) -> WebSession? {
        guard let s = sessions.session(token) else { return nil }
        guard let account = try? accounts.accounts().first(where: { $0.name == s.user }), account.hash == s.passwordHash
        else {
            sessions.end(token)
            return nil
        }
        return s
    }

    func status(_ session: WebSession?) -> JSON {
        var members: [(key: String, value: JSON)] = [
            ("ok", .bool(true)), ("hub", .string(mqtt.topics.hub)),
            ("broker", .object([("address", .string(brokerAddress)), ("connected", .bool(mqtt.client.isConnected))])),
            ("peers", .array(mqtt.peerStatuses().map {
                .object([("hub", .string($0.hub)), ("status", .string($0.status.rawValue))])
            })),
        ]
        if let session {
            members.append(
                ("user", .object([("name", .string(session.user)), ("role", .string(session.role.rawValue))])))
        }
        return .object(members)
    }

    // MARK: Checks

    /// A `Host` that is not an address of this machine nor one of its names: a DNS-rebinding page's request.
    func hostProblem(_ r: WebRequest) -> String? {
        guard let host = r.host, !host.isEmpty else { return "a request names its Host" }
        if r.remoteIsLoopback { return nil }  // a reverse proxy on this machine passes the name it was reached by
        var name = host.lowercased()
        if name.hasPrefix("[") {
            name = String(name.dropFirst().prefix { $0 != "]" })
        } else if let colon = name.lastIndex(of: ":"),
            name.firstIndex(of: ":") == colon
        {
            name = String(name[..<colon])
        }
        if WebSettings.isAddress(name) || hostNames.contains(name) { return nil }
        return
            "this hub does not answer to the name '\(host)'; open it by its address or "
                + "\(hostNames.sorted().joined(separator: ", "))"
    }

    /// Why a change is refused: another site's page (`Origin` not this `Host`), or a body that is not JSON (which a
    /// plain HTML form could send).
    func changeProblem(_ r: WebRequest) -> WebResponse? {
        if let origin = r.origin {
            let host = r.host ?? ""
            guard origin == "http://" + host || origin == "https://" + host else {
                return Self.error(403, HomeError(code: .permissionDenied, status: .unsupportedAccess,
                                                 message: "a change from another site (\(origin)) is refused"))
            }
        }
        if r.method == "POST" {
            let type =
                (r.contentType ?? "").lowercased().split(separator: ";").first.map { $0.trimmingCharacters } ?? ""
            let archive =
                type == Self.archiveType && Self.bodyLimit(method: r.method, uri: r.uri) > JSONBody.maximumSize
            guard type == "application/json" || archive else {
                return Self.error(415, .invalidCommand("a change is a JSON body (Content-Type: application/json)"))
            }
        }
        return nil
    }

    // MARK: Accounts

    private func login(_ r: WebRequest, _ reply: @escaping @Sendable (WebResponse) -> Void) {
        let form: LoginForm
        do throws(HomeError) { form = try LoginForm(r.body) } catch { return reply(Self.error(400, error)) }
        let wait = limit.withLock { $0.wait(r.remote, now: sessions.now()) }
        guard wait == 0 else {
            return reply(
                Self.error(
                    429, HomeError(.busy, "too many failed sign-ins; try again in \((wait + 999) / 1000) s"),
                    headers: [("Retry-After", "\((wait + 999) / 1000)")]))
        }
        let account = (try? accounts.accounts())?.first { $0.name == form.user }
        hashing(reply) { [self] in
            // An unknown user costs the same hash as a wrong password, so the time says nothing of which names exist.
            let decoy = WebAccount(name: "", role: .viewer, iterations: accounts.iterations, salt: [0], hash: [0])
            let verified = (account ?? decoy).verifies(form.password) && account != nil
            guard verified, let account else {
                limit.withLock { $0.failed(r.remote, now: sessions.now()) }
                logger.notice("web: a failed sign-in as '\(form.user)' from \(r.remote)")
                return reply(Self.error(401, HomeError(code: .unauthenticated, status: .unsupportedAccess,
                                                       message: "wrong user name or password")))
            }
            limit.withLock { $0.succeeded(r.remote) }
            reply(signedIn(account))
        }
    }

    private func setUp(_ r: WebRequest, _ reply: @escaping @Sendable (WebResponse) -> Void) {
        let m: [String: JSON]
        do throws(HomeError) {
            m = try JSONBody.object(
                r.body,
                fields: [
                    "code": .string(maxLength: 64), "password": .string(maxLength: LoginForm.maximumPasswordLength)
                ],
                required: ["code", "password"])
        } catch { return reply(Self.error(400, error)) }
        guard case .string(let code)? = m["code"], case .string(let password)? = m["password"] else { return }
        let wait = limit.withLock { $0.wait(r.remote, now: sessions.now()) }
        guard wait == 0 else {
            return reply(
                Self.error(429, HomeError(.busy, "too many wrong setup codes; try again in \((wait + 999) / 1000) s")))
        }
        guard (try? accounts.hasAdmin()) == false else {
            return reply(
                Self.error(
                    409,
                    HomeError(
                        .invalidInState,
                        "the admin password is set already; sign in, or run "
                            + "`hearthd web reset-password` on the hub")))
        }
        guard accounts.checkSetupCode(code) else {
            limit.withLock { $0.failed(r.remote, now: sessions.now()) }
            return reply(
                Self.error(
                    401,
                    HomeError(
                        code: .unauthenticated, status: .unsupportedAccess,
                        message: "wrong setup code; `hearthd web setup-code` on the hub prints it")))
        }
        if let problem = LoginForm.problem(withNewPassword: password) {
            return reply(Self.error(400, .constraintError(problem)))
        }
        hashing(reply) { [self] in
            do throws(WebAccountsError) {
                try accounts.setUp(password: password)
                guard let admin = try accounts.accounts().first(where: { $0.role == .admin }) else { return }
                logger.notice("web: the admin password was set; the setup code is used up")
                limit.withLock { $0.succeeded(r.remote) }
                reply(signedIn(admin))
            } catch { reply(Self.error(500, HomeError(.failure, "\(error)"))) }
        }
    }

    private func changePassword(
        _ r: WebRequest, _ session: WebSession, _ reply: @escaping @Sendable (WebResponse) -> Void
    ) {
        let m: [String: JSON]
        do throws(HomeError) {
            m = try JSONBody.object(r.body, fields: ["current": .string(maxLength: LoginForm.maximumPasswordLength),
                                                     "new": .string(maxLength: LoginForm.maximumPasswordLength)],
                                    required: ["current", "new"])
        } catch { return reply(Self.error(400, error)) }
        guard case .string(let current)? = m["current"], case .string(let new)? = m["new"] else { return }
        if let problem = LoginForm.problem(withNewPassword: new) {
            return reply(Self.error(400, .constraintError(problem)))
        }
        hashing(reply) { [self] in
            guard let account = try? accounts.accounts().first(where: { $0.name == session.user }),
                account.verifies(current)
            else {
                return reply(
                    Self.error(
                        401,
                        HomeError(
                            code: .unauthenticated, status: .unsupportedAccess, message: "the current password is wrong"
                        )))
            }
            do {
                try accounts.replace(
                    try WebAccount.make(
                        name: account.name, role: account.role, password: new, iterations: accounts.iterations))
                sessions.end(user: account.name)
                guard let updated = try accounts.accounts().first(where: { $0.name == account.name }) else { return }
                reply(signedIn(updated))
            } catch { reply(Self.error(500, HomeError(.failure, "\(error)"))) }
        }
    }

    private func addViewer(_ r: WebRequest, _ reply: @escaping @Sendable (WebResponse) -> Void) {
        let m: [String: JSON]
        do throws(HomeError) {
            m = try JSONBody.object(
                r.body,
                fields: [
                    "name": .string(maxLength: 64), "password": .string(maxLength: LoginForm.maximumPasswordLength)
                ],
                required: ["name", "password"])
        } catch { return reply(Self.error(400, error)) }
        guard case .string(let name)? = m["name"], case .string(let password)? = m["password"] else { return }
        if let problem = LoginForm.problem(withUserName: name) ?? LoginForm.problem(withNewPassword: password) {
            return reply(Self.error(400, .constraintError(problem)))
        }
        guard name != "admin" else { return reply(Self.error(400, .constraintError("'admin' is the admin's name"))) }
        hashing(reply) { [self] in
            do {
                try accounts.replace(
                    try WebAccount.make(name: name, role: .viewer, password: password, iterations: accounts.iterations))
                sessions.end(user: name)
                reply(
                    Self.json(200, .object([("ok", .bool(true)), ("name", .string(name)), ("role", .string("viewer"))]))
                )
            } catch { reply(Self.error(500, HomeError(.failure, "\(error)"))) }
        }
    }

    private func signedIn(_ account: WebAccount) -> WebResponse {
        do throws(CryptoError) {
            let token = try sessions.start(
                WebSession(user: account.name, role: account.role, passwordHash: account.hash, expires: 0))
            return Self.json(
                200,
                .object([("ok", .bool(true)), ("user", .string(account.name)), ("role", .string(account.role.rawValue))]
                ),
                cookie: cookie(token, maxAge: WebSessions.lifetime / 1000))
        } catch { return Self.error(500, HomeError(.failure, "\(error)")) }
    }

    /// Runs password hashing off the event loop, one at a time; refuses with `busy` when `kdfQueueLimit` wait already.
    private func hashing(_ reply: @escaping @Sendable (WebResponse) -> Void, _ work: @escaping @Sendable () -> Void) {
        let admitted = kdfWaiting.withLock { n in
            guard n < Self.kdfQueueLimit else { return false }
            n += 1
            return true
        }
        guard admitted else {
            return reply(Self.error(503, HomeError(.busy, "the hub is checking other passwords; try again")))
        }
        kdfQueue.async { [self] in
            work()
            kdfWaiting.withLock { $0 -= 1 }
        }
    }

    // MARK: Responses

    func cookie(_ token: String, maxAge: Int64) -> (String, String) {
        let secure = overTLS ? "; Secure" : ""
        return (
            "Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict\(secure); Max-Age=\(maxAge)"
        )
    }

    static func errorObject(_ e: HomeError) -> JSON {
        .object([
            ("code", .string(e.code.rawValue)), ("status", .string(e.status.rawValue)), ("message", .string(e.message))
        ])
    }

    static func error(_ status: Int, _ e: HomeError, headers: [(String, String)] = []) -> WebResponse {
        var r = json(status, .object([("ok", .bool(false)), ("error", errorObject(e))]))
        r.headers += headers
        return r
    }

    static func viewerRefused() -> WebResponse {
        error(
            403,
            HomeError(
                code: .permissionDenied, status: .unsupportedAccess,
                message: "a viewer sees the home but changes nothing"))
    }

    static func json(_ status: Int, _ body: JSON, cookie: (String, String)? = nil) -> WebResponse {
        var r = raw(status, body.bytes)
        if let cookie { r.headers.append(cookie) }
        return r
    }

    static func raw(_ status: Int, _ body: [UInt8]) -> WebResponse {
        WebResponse(
            status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: body)
    }

    private func split(_ uri: String) -> (String, String?) {
        guard let q = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<q]), String(uri[uri.index(after: q)...]))
    }
}

extension Substring {
    var trimmingCharacters: String { trimmingSpaces }
}

/// A request path in segments, each percent-decoded (`/api/devices/porch%20lamp` → `api`, `devices`, `porch lamp`);
/// nil for a path that does not start with `/`, a bad escape, or a segment that is not UTF-8.
public enum PathReader {
    /// The longest path read, in bytes as sent (percent-encoded).
    public static let maximumLength = 2048

    public static func segments(_ path: String) -> [String]? {
        guard path.hasPrefix("/"), path.utf8.count <= maximumLength else { return nil }
        var out: [String] = []
        for raw in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            var bytes: [UInt8] = []
            var i = raw.startIndex
            while i < raw.endIndex {
                let c = raw[i]
                if c == UInt8(ascii: "%") {
                    let h = raw.index(after: i)
                    guard h < raw.endIndex, raw.index(after: h) < raw.endIndex,
                        let v = UInt8(String(decoding: raw[h...raw.index(after: h)], as: UTF8.self), radix: 16)
                    else { return nil }
                    bytes.append(v)
                    i = raw.index(h, offsetBy: 2)
                } else {
                    bytes.append(c)
                    i = raw.index(after: i)
                }
            }
            guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
            out.append(s)
        }
        return out
    }
}
