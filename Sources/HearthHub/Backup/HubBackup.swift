// A hub's backup and its restore: what goes into the archive (the configuration without the broker's credentials,
// the board file, the saved state and the Matter node's storage), and a restore that runs check-config's checks on
// the archive's configuration before anything is written. The state is not written under the running hub, which
// saves its own state and Matter storage until it stops: it is staged in `<stateDirectory>/restore/` and moved into
// place by the next start (`HubBackup.applyStagedRestore`), before anything is read.
public import HearthConfig
#if canImport(Glibc)
import Glibc
#endif

/// Where a hub's files are: what a backup reads and a restore writes.
public struct BackupPlace: Sendable {
    /// The configuration file the hub was started with.
    public var configFile: String
    /// The state directory the hub runs with (the configuration's, or the command line's).
    public var stateDirectory: String
    /// What check-config reads boards and makes bindings with.
    public var hardware: any HardwareProvider
    /// The file that marks a configuration written from the page as not yet started (`ConfigurationFile.pendingPath`),
    /// so that a restored configuration that does not start after all is rolled back like a saved one.
    public var pendingMarker: String?

    public init(
        configFile: String, stateDirectory: String, hardware: any HardwareProvider, pendingMarker: String? = nil
    ) {
        self.configFile = configFile
        self.stateDirectory = stateDirectory
        self.hardware = hardware
        self.pendingMarker = pendingMarker
    }
}

/// Why a backup could not be made or restored.
public enum BackupError: Error, Sendable, CustomStringConvertible {
    /// The upload is not a backup archive this hub reads.
    case archive(BackupArchiveError)
    /// The archive is a tar, but not a Hearth backup (no manifest, another version, no configuration).
    case notABackup(String)
    /// The archive's configuration fails check-config: each problem at its line and column of `hearth.yaml`.
    case configuration([ConfigProblem])
    /// A file of the hub could not be read or written.
    case file(String)

    public var description: String {
        switch self {
        case .archive(let e): return "\(e)"
        case .notABackup(let why): return why
        case .configuration(let problems):
            return "the backup's configuration has \(problems.count) problem(s); nothing was restored:\n"
                + problems.map(\.description).joined(separator: "\n")
        case .file(let why): return why
        }
    }
}

/// Making and restoring a hub's backup.
public enum HubBackup {
    /// The manifest's text: what the archive is, in which version of its layout.
    static let manifest = Array("hearth-backup 1\n".utf8)
    /// The staging folder in the state directory that the next start moves into place.
    public static func stagingDirectory(_ stateDirectory: String) -> String { stateDirectory + "/restore" }

    // MARK: Backup

    /// The archive of `place`'s hub. The configuration's inline broker user name and password (not `!secret`, not
    /// `passwordFile`) are replaced by `!secret mqttUsername` / `!secret mqttPassword`; `secrets.yaml` and password
    /// files are never read into it. `modified` is the members' time (seconds since 1970; now by default).
    public static func make(_ place: BackupPlace, modified: Int? = nil) throws(BackupError) -> [UInt8] {
        guard let config = try BackupFiles.read(place.configFile) else {
            throw .file("cannot read the configuration \(place.configFile)")
        }
        var members = [BackupMember(name: BackupArchive.MemberName.manifest, bytes: manifest)]
        members.append(
            BackupMember(
                name: BackupArchive.MemberName.configuration,
                bytes: try withoutCredentials(config, file: place.configFile)))
        let diagnostics = ConfigDiagnostics()
        if let root = ConfigValue.parse(config, file: place.configFile, diagnostics: diagnostics),
            let read = HubConfiguration.readPartially(root, diagnostics: diagnostics), !read.boardFile.isEmpty,
            let board = try BackupFiles.read(read.boardFile)
        {
            members.append(BackupMember(name: BackupArchive.MemberName.board, bytes: board))
        }
        if let state = try BackupFiles.read(place.stateDirectory + "/state.json") {
            members.append(BackupMember(name: BackupArchive.MemberName.state, bytes: state))
        }
        let matter = place.stateDirectory + "/matter"
        for file in BackupFiles.regularFiles(in: matter)
        where BackupArchive.MemberName.isStorageFileName(file) && !file.hasSuffix(".tmp") {
            if let bytes = try BackupFiles.read(matter + "/" + file) {
                members.append(BackupMember(name: BackupArchive.MemberName.matterFolder + file, bytes: bytes))
            }
        }
        return BackupArchive.write(members, modified: modified ?? Int(time(nil)))
    }

    /// The configuration's text with the broker's inline credentials replaced by `!secret` references; refused
    /// when the replacement cannot be made sure of (a value over several lines).
    static func withoutCredentials(_ text: [UInt8], file: String) throws(BackupError) -> [UInt8] {
        let replacements = [("username", "mqttUsername"), ("password", "mqttPassword")]
        var lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        var replaced: [String] = []
        for (key, secret) in replacements {
            guard let node = mqttNode(text, key: key, file: file), node.secret == nil else { continue }
            guard case .scalar(let value, _) = node.value, !value.contains("\n"), node.line >= 1,
                node.line <= lines.count
            else {
                throw .file("mqtt.\(key) in \(file) is not one line; move it to secrets.yaml (!secret) to back up")
            }
            // Columns count characters: cut the line's text, not its bytes.
            let line = String(decoding: lines[node.line - 1], as: UTF8.self)
            let start = line.index(line.startIndex, offsetBy: min(node.column - 1, line.count))
            lines[node.line - 1] = Array((String(line[..<start]) + "!secret \(secret)").utf8)
            replaced.append(key)
        }
        guard !replaced.isEmpty else { return text }
        let out = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
        for key in replaced where mqttNode(out, key: key, file: file)?.secret == nil {
            throw .file("mqtt.\(key) in \(file) could not be left out; move it to secrets.yaml (!secret) to back up")
        }
        return out
    }

    /// `mqtt.<key>`'s node in a configuration's text, if it is there.
    private static func mqttNode(_ text: [UInt8], key: String, file: String) -> YAMLNode? {
        // No secrets store: the names of `!secret` values are enough, and their values are never read here.
        let root = ConfigValue.parse(
            text, file: file, diagnostics: ConfigDiagnostics(),
            secrets: SecretStore(file: "/nonexistent/secrets.yaml", diagnostics: ConfigDiagnostics()))
        guard case .mapping(let top)? = root?.node.value,
            case .mapping(let mqtt)? = top.first(where: { $0.key == "mqtt" })?.value.value
        else { return nil }
        return mqtt.first(where: { $0.key == key })?.value
    }

    // MARK: Restore

    /// What a restore did: the configuration written, and the state staged for the next start.
    public struct Restored: Sendable {
        public var configuration: String
        public var staged: [String]
    }

    /// Reads `archive`, checks its configuration as check-config does (beside the hub's own configuration, so
    /// `secrets.yaml` and relative board paths are the hub's), then writes the configuration (and the board, when it
    /// lies in the configuration's folder) atomically and stages the state for the next start. On any problem
    /// nothing is changed.
    public static func restore(_ archive: [UInt8], into place: BackupPlace) throws(BackupError) -> Restored {
        let members: [BackupMember]
        do throws(BackupArchiveError) { members = try BackupArchive.read(archive) } catch { throw .archive(error) }
        guard let first = members.first, first.name == BackupArchive.MemberName.manifest else {
            throw .notABackup("the archive does not start with '\(BackupArchive.MemberName.manifest)'")
        }
        guard first.bytes == manifest else {
            throw .notABackup(
                "the archive is '\(String(decoding: first.bytes.prefix(40), as: UTF8.self))'; this hub reads "
                    + "'hearth-backup 1'")
        }
        guard let config = members.first(where: { $0.name == BackupArchive.MemberName.configuration })?.bytes else {
            throw .notABackup("the archive holds no \(BackupArchive.MemberName.configuration)")
        }
        let board = members.first { $0.name == BackupArchive.MemberName.board }?.bytes
        // Absolute, as the configuration reader makes the board's path, so that the two compare.
        let directory = HubConfiguration.directory(of: place.configFile)
        let candidate = directory + "/.hearth-restore.yaml"
        try BackupFiles.writeAtomically(candidate, config, mode: 0o640)
        var boardWritten: (path: String, old: [UInt8]?)?
        func undo() {
            unlink(candidate)
            if let b = boardWritten {
                if let old = b.old {
                    try? BackupFiles.writeAtomically(b.path, old, mode: 0o644)
                } else {
                    unlink(b.path)
                }
            }
        }
        // The board the archive's configuration names, as this hub resolves it.
        if let board {
            let diagnostics = ConfigDiagnostics()
            if let root = ConfigValue.parse(config, file: candidate, diagnostics: diagnostics),
                let read = HubConfiguration.readPartially(root, diagnostics: diagnostics), !read.boardFile.isEmpty
            {
                let current: [UInt8]?
                do throws(BackupError) { current = try BackupFiles.read(read.boardFile) } catch {
                    undo()
                    throw error
                }
                if current != board {
                    guard read.boardFile.hasPrefix(directory + "/") else {
                        undo()
                        throw .notABackup(
                            "the backup's board differs from \(read.boardFile), which is outside the configuration's "
                                + "folder \(directory); copy it there by hand, or name a board in that folder")
                    }
                    boardWritten = (read.boardFile, current)
                    do throws(BackupError) { try BackupFiles.writeAtomically(read.boardFile, board, mode: 0o644) } catch
                    {
                        undo()
                        throw error
                    }
                }
            }
        }
        let report = HubDaemon.checkReport(configFile: candidate, hardware: place.hardware)
        guard report.problems.isEmpty else {
            undo()
            throw .configuration(
                report.problems.map { p in
                    var p = p
                    if p.file == candidate { p.file = BackupArchive.MemberName.configuration }
                    return p
                })
        }
        // The state, staged whole (written to a folder beside it, then renamed) so a start sees all of it or none.
        let staging = stagingDirectory(place.stateDirectory)
        let partial = staging + ".tmp"
        var staged: [String] = []
        do throws(BackupError) {
            try BackupFiles.makeDirectory(place.stateDirectory, mode: 0o750)
            BackupFiles.removeTree(partial)
            try BackupFiles.makeDirectory(partial + "/matter", mode: 0o700)
            for m in members where m.name.hasPrefix("state/") {
                let relative = String(m.name.dropFirst("state/".count))
                try BackupFiles.writeAtomically(partial + "/" + relative, m.bytes, mode: 0o600)
                staged.append(relative)
            }
            BackupFiles.removeTree(staging)
            guard rename(partial, staging) == 0 else {
                throw .file("cannot rename \(partial) to \(staging): \(BackupFiles.errorText())")
            }
            if let marker = place.pendingMarker { try BackupFiles.writeAtomically(marker, [], mode: 0o644) }
            guard rename(candidate, place.configFile) == 0 else {
                BackupFiles.removeTree(staging)
                if let marker = place.pendingMarker { unlink(marker) }
                throw .file("cannot rename \(candidate) to \(place.configFile): \(BackupFiles.errorText())")
            }
        } catch {
            undo()
            BackupFiles.removeTree(partial)
            throw error
        }
        BackupFiles.syncDirectory(directory)
        return Restored(configuration: place.configFile, staged: staged.sorted())
    }

    /// At start, before the state is read: moves a staged restore into place (the state file, the Matter storage
    /// folder as a whole) and removes the staging folder. Returns what was restored, or nil when nothing was staged.
    public static func applyStagedRestore(stateDirectory: String) throws(BackupError) -> [String]? {
        let staging = stagingDirectory(stateDirectory)
        var info = stat()
        guard stat(staging, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        var applied: [String] = []
        if access(staging + "/state.json", F_OK) == 0 {
            guard rename(staging + "/state.json", stateDirectory + "/state.json") == 0 else {
                throw .file("cannot move the restored state into \(stateDirectory): \(BackupFiles.errorText())")
            }
            applied.append("state.json")
        }
        let matter = stateDirectory + "/matter", replaced = stateDirectory + "/matter.replaced"
        BackupFiles.removeTree(replaced)
        if access(matter, F_OK) == 0 && rename(matter, replaced) != 0 {
            throw .file("cannot move \(matter) aside for the restored one: \(BackupFiles.errorText())")
        }
        guard rename(staging + "/matter", matter) == 0 else {
            throw .file("cannot move the restored Matter storage into \(matter): \(BackupFiles.errorText())")
        }
        applied.append("matter")
        BackupFiles.removeTree(replaced)
        BackupFiles.removeTree(staging)
        BackupFiles.syncDirectory(stateDirectory)
        return applied
    }
}
