// The web page's administration (docs/web-api.md, "Administration"): every route under `/api/admin/`, for the admin
// alone (a viewer gets 403), behind the same Host, Origin, content-type and session checks as the rest of the API.
// The configuration as the hub runs it and its wiring, a new configuration checked as `hearthd check-config` checks
// one and saved only without problems (then the hub restarts to apply it), and the recent log lines. Checks and saves
// read and write files: they run on a serial queue of their own, never on the event loop.
//
// A panel of its own adds its routes to `route` below and its part of the page to `adminPanel` in app.js.
import Dispatch
import HearthConfig
import HearthHub
import HearthJSON
public import HearthModel
import HearthSync
public import Logging

final class WebAdmin: Sendable {
    let administration: HubAdministration
    /// Checks and saves, one at a time; `waiting` bounds what queues for it.
    private let queue = DispatchQueue(label: "hearth.web.admin")
    private let waiting = Locked(0)
    static let queueLimit = 4
    /// The wiring view of the configuration the hub runs, made once (the hub restarts to run another).
    private let wiring = Locked<JSON?>(nil)

    init(_ administration: HubAdministration) { self.administration = administration }

    /// The largest body a route here takes: a configuration text, JSON-escaped.
    static let maximumBodySize = 2 * ConfigurationFile.maximumSize + 1024

    /// Answers `/api/admin/<route…>` for `session`: the admin alone; a route it does not know is 404.
    func route(
        _ r: WebRequest, _ route: [String], query: String?, session: WebSession,
        _ reply: @escaping @Sendable (WebResponse) -> Void
    ) {
        guard session.role == .admin else {
            return reply(
                WebAPI.error(
                    403,
                    HomeError(
                        code: .permissionDenied, status: .unsupportedAccess,
                        message: "the hub's administration is for the admin alone")))
        }
        switch (r.method, route) {
        case ("GET", ["config"]): reply(configuration())
        case ("GET", ["wiring"]): off(reply) { [self] in wiringView() }
        case ("POST", ["config", "check"]): off(reply) { [self] in check(r.body, saving: false) }
        case ("POST", ["config"]): off(reply) { [self] in check(r.body, saving: true) }
        case ("GET", ["logs"]): reply(logs(query))
        default:
            reply(
                WebAPI.error(404, HomeError(.notFound, "no API \(r.method) /api/admin/\(route.joined(separator: "/"))"))
            )
        }
    }

    // MARK: Configuration

    private func configuration() -> WebResponse {
        let file = administration.configuration
        return WebAPI.json(
            200,
            .object([
                ("ok", .bool(true)), ("file", .string(file.path)),
                ("text", .string(String(decoding: file.startedText, as: UTF8.self))),
            ]))
    }

    private func wiringView() -> WebResponse {
        if let cached = wiring.withLock({ $0 }) { return WebAPI.json(200, cached) }
        let file = administration.configuration
        let report: HubDaemon.CheckReport
        do throws(ConfigurationFileError) { report = try file.check(file.startedText) } catch {
            return WebAPI.error(500, HomeError(.failure, "\(error)"))
        }
        let view = JSON.object([
            ("ok", .bool(true)), ("file", .string(file.path)),
            ("summary", .array(report.summary.map { .string($0) })),
            ("problems", .array(report.problems.map(Self.problem))),
        ])
        if report.problems.isEmpty { wiring.withLock { $0 = view } }
        return WebAPI.json(200, view)
    }

    /// A check (`saving: false`) or a save: 200 with the warnings when the text has no problem (a save is then
    /// written and the hub restarts once the answer is sent), 422 with every problem when it has (nothing written).
    private func check(_ body: [UInt8], saving: Bool) -> WebResponse {
        let text: [UInt8]
        do throws(HomeError) { text = try AdminInput.configurationText(body) } catch {
            return WebAPI.error(400, error)
        }
        let file = administration.configuration
        let report: HubDaemon.CheckReport
        do throws(ConfigurationFileError) {
            report = saving ? try file.save(text) : try file.check(text)
        } catch {
            return WebAPI.error(500, HomeError(.failure, "\(error)"))
        }
        let ok = report.problems.isEmpty
        var members: [(key: String, value: JSON)] = [
            ("ok", .bool(ok)),
            ("problems", .array(report.problems.map(Self.problem))),
            ("warnings", .array(report.warnings.map(Self.problem))),
        ]
        if !ok {
            members.append(
                ("error", WebAPI.errorObject(.constraintError(
                    "the configuration has \(report.problems.count) problem(s); nothing was "
                        + (saving ? "saved" : "applied")))))
            return WebAPI.json(422, .object(members))
        }
        guard saving else { return WebAPI.json(200, .object(members)) }
        members.append(("saved", .string(file.path)))
        members.append(("restarting", .bool(true)))
        var response = WebAPI.json(200, .object(members))
        let restart = administration.restart
        response.afterWrite = { restart.request(reason: "a new configuration was saved from the web page") }
        return response
    }

    static func problem(_ p: ConfigProblem) -> JSON {
        .object([
            ("file", .string(p.file)), ("line", .int(p.line)), ("column", .int(p.column)),
            ("path", .string(p.path)), ("message", .string(p.message)),
        ])
    }

    // MARK: Logs

    private func logs(_ query: String?) -> WebResponse {
        let q: AdminInput.LogQuery
        do throws(HomeError) { q = try AdminInput.logQuery(query) } catch { return WebAPI.error(400, error) }
        let lines = administration.logs.lines(after: q.after, atLeast: q.level, limit: q.limit)
        return WebAPI.json(
            200,
            .object([
                ("ok", .bool(true)), ("newest", .int(administration.logs.newest)),
                ("capacity", .int(administration.logs.capacity)),
                ("lines", .array(lines.map(Self.line))),
            ]))
    }

    static func line(_ l: LogLine) -> JSON {
        .object([
            ("seq", .int(l.sequence)), ("time", .string(l.time)), ("level", .string(l.level.rawValue)),
            ("text", .string(l.text)),
        ])
    }

    /// Runs `work` on the admin queue and replies with what it returns; refuses with `busy` when `queueLimit` wait.
    private func off(_ reply: @escaping @Sendable (WebResponse) -> Void, _ work: @escaping @Sendable () -> WebResponse)
    {
        let admitted = waiting.withLock { n in
            guard n < Self.queueLimit else { return false }
            n += 1
            return true
        }
        guard admitted else {
            return reply(WebAPI.error(503, HomeError(.busy, "the hub is checking other configurations; try again")))
        }
        queue.async { [self] in
            let response = work()
            waiting.withLock { $0 -= 1 }
            reply(response)
        }
    }
}

/// The readers of what the administration's routes take from a browser. Each is a fuzz target (`web`: `admin-config`,
/// `logs-query`): any bytes give a value or a typed error, never a crash.
public enum AdminInput {
    /// `{"text": "…"}`: the configuration's text, at most `ConfigurationFile.maximumSize` bytes of UTF-8.
    public static func configurationText(_ body: [UInt8]) throws(HomeError) -> [UInt8] {
        guard body.count <= WebAdmin.maximumBodySize else {
            throw HomeError(.resourceExhausted, "the body is \(body.count) bytes; at most \(WebAdmin.maximumBodySize)")
        }
        let json: JSON
        do throws(JSONParseError) { json = try JSON.parse(body) } catch {
            throw HomeError.invalidCommand("the body is not JSON: \(error)")
        }
        guard case .object(let members) = json else {
            throw HomeError.invalidCommand("the body is \(json.kind), not an object")
        }
        var text: String?
        for (key, value) in members {
            guard key == "text" else { throw HomeError.invalidCommand("unknown member '\(key)'; this takes text") }
            guard case .string(let s) = value else {
                throw HomeError.invalidDataType("'text' is \(value.kind), not a string")
            }
            text = s
        }
        guard let text else { throw HomeError.invalidCommand("'text' is missing") }
        let bytes = Array(text.utf8)
        guard bytes.count <= ConfigurationFile.maximumSize else {
            throw HomeError.constraintError(
                "the configuration is \(bytes.count) bytes; at most \(ConfigurationFile.maximumSize)")
        }
        return bytes
    }

    /// What `GET /api/admin/logs` asks for.
    public struct LogQuery: Sendable, Equatable {
        public var after = 0
        public var level = Logger.Level.trace
        public var limit = LogRing.defaultCapacity
    }

    /// `after=N&level=L&limit=N`, each optional, in any order, each at most once.
    public static func logQuery(_ query: String?) throws(HomeError) -> LogQuery {
        var q = LogQuery()
        var seen: Set<String> = []
        guard let query, !query.isEmpty else { return q }
        guard query.utf8.count <= 256 else { throw HomeError.constraintError("the query is longer than 256 bytes") }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]), value = parts.count > 1 ? String(parts[1]) : ""
            guard seen.insert(key).inserted else { throw HomeError.invalidCommand("'\(key)' is given twice") }
            switch key {
            case "after":
                guard let n = Int(value), n >= 0 else {
                    throw HomeError.constraintError("after is a line's number, 0 or more; '\(value)' is not")
                }
                q.after = n
            case "limit":
                guard let n = Int(value), n >= 1, n <= LogRing.defaultCapacity else {
                    throw HomeError.constraintError("limit is 1 to \(LogRing.defaultCapacity); '\(value)' is not")
                }
                q.limit = n
            case "level":
                guard let level = Logger.Level(rawValue: value) else {
                    throw HomeError.constraintError(
                        "level is one of trace, debug, info, notice, warning, error, critical; '\(value)' is not")
                }
                q.level = level
            default:
                throw HomeError.invalidCommand("unknown parameter '\(key)'; this takes after, level and limit")
            }
        }
        return q
    }
}
