// The page's backup and restore (docs/web-api.md, "Backup and restore"), for the admin only: `GET /api/backup` is the
// hub's archive (HubBackup), `POST /api/restore` takes one back: checked as check-config checks, written, and the hub
// restarted. The files are read and written on a queue of their own, never on the event loop.
import Dispatch
import HearthContract
import HearthSync
import Logging
import HearthConfig
public import HearthHub
import HearthJSON
import HearthModel

/// What the web page's backup needs from the daemon: where the hub's files are, and how it restarts itself.
public struct WebBackup: Sendable {
    public var place: BackupPlace
    /// Asks the hub to restart (to read the restored configuration and state); nil when it cannot restart itself.
    public var restart: (@Sendable () -> Void)?

    public init(place: BackupPlace, restart: (@Sendable () -> Void)?) {
        self.place = place
        self.restart = restart
    }
}

extension WebServer {
    /// Offers backup and restore on the page (they answer 503 until this is called).
    public func enableBackup(_ backup: WebBackup) { api.backup.withLock { $0 = backup } }
}

extension WebAPI {
    static let backupQueue = DispatchQueue(label: "hearth.web.backup")
    static let archiveType = "application/x-tar"

    /// The largest body of a request: an archive for a restore, a JSON body otherwise.
    static func bodyLimit(method: String, uri: String) -> Int {
        method == "POST" && uri == "/api/restore" ? BackupArchive.maximumSize : JSONBody.maximumSize
    }

    /// `GET /api/backup` and `POST /api/restore`; false for any other route.
    func backupRoute(_ r: WebRequest, _ session: WebSession, _ route: [String],
                     _ reply: @escaping @Sendable (WebResponse) -> Void) -> Bool {
        switch (r.method, route) {
        case ("GET", ["backup"]), ("HEAD", ["backup"]): break
        case ("POST", ["restore"]): break
        default: return false
        }
        guard session.role == .admin else {
            reply(Self.error(403, HomeError(code: .permissionDenied, status: .unsupportedAccess,
                                            message: "only the admin backs up and restores the hub")))
            return true
        }
        guard let backup = self.backup.withLock({ $0 }) else {
            reply(Self.error(503, HomeError(.invalidInState,
                                            "this hub was not started from a configuration file it can back up")))
            return true
        }
        let hub = mqtt.topics.hub
        if r.method == "POST" {
            let body = r.body, user = session.user
            Self.backupQueue.async { [self] in reply(restore(body, backup, user: user)) }
        } else {
            Self.backupQueue.async { [self] in
                do throws(BackupError) {
                    let archive = try HubBackup.make(backup.place)
                    logger.notice("web: '\(session.user)' downloaded a backup")
                    reply(WebResponse(status: 200, headers: [
                        ("Content-Type", Self.archiveType), ("Cache-Control", "no-store"),
                        ("Content-Disposition", "attachment; filename=\"hearth-\(Self.fileNamePart(hub))-backup.tar\""),
                    ], body: archive))
                } catch {
                    reply(Self.error(500, HomeError(.failure, "\(error)")))
                }
            }
        }
        return true
    }

    private func restore(_ body: [UInt8], _ backup: WebBackup, user: String) -> WebResponse {
        let restored: HubBackup.Restored
        do throws(BackupError) {
            restored = try HubBackup.restore(body, into: backup.place)
        } catch {
            switch error {
            case .configuration(let problems):
                var r = Self.json(422, .object([
                    ("ok", .bool(false)),
                    ("error", Self.errorObject(.constraintError("\(error)"))),
                    ("problems", .array(problems.map { p in
                        .object([("file", .string(p.file)), ("line", .int(p.line)),
                                 ("column", .int(p.column)), ("path", .string(p.path)),
                                 ("message", .string(p.message))])
                    })),
                ]))
                r.headers.append(("X-Hearth-Restored", "no"))
                return r
            case .archive, .notABackup: return Self.error(400, .invalidCommand("\(error)"))
            case .file: return Self.error(500, HomeError(.failure, "\(error)"))
            }
        }
        logger.notice(
            """
            web: '\(user)' restored a backup: \(restored.configuration) written, \(restored.staged.count) state \
            file(s) staged
            """)
        var response = Self.json(200, .object([
            ("ok", .bool(true)), ("restarting", .bool(backup.restart != nil)),
            ("configuration", .string(restored.configuration)),
            ("staged", .array(restored.staged.map { .string($0) })),
        ]))
        // Once the answer has left: the restart closes this connection.
        response.afterWrite = backup.restart
        return response
    }

    /// A hub id as a file name's part: letters, digits, `-` and `_`; anything else `_`.
    static func fileNamePart(_ id: String) -> String {
        String(
            id.unicodeScalars.map { s in
                s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || s == "-" || s == "_")
                    ? Character(s) : "_"
            })
    }
}
