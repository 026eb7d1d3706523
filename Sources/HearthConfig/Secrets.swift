#if canImport(Glibc)
import Glibc
#endif

/// Reads files that hold secrets (an MQTT password file, `secrets.yaml`) and refuses ones that other
/// users can read, the way ssh refuses a private key with loose permissions.
///
/// The rule: no access for others; group read only for a file owned by root whose group this process is
/// in (the board image's `root:hearth 0640` for a hub running as user `hearth`).
public enum SecretFile {
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case unreadable(String)
        case exposed(String)
        case invalid(String)

        public var description: String {
            switch self {
            case .unreadable(let m), .exposed(let m), .invalid(let m): m
            }
        }
    }

    /// The file's bytes, after checking who else may read it.
    public static func read(_ path: String) -> Result<[UInt8], Failure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return .failure(.unreadable("cannot read \(path): \(String(cString: strerror(errno)))")) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            return .failure(.unreadable("cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        guard st.st_mode & S_IFMT == S_IFREG else { return .failure(.unreadable("\(path) is not a regular file")) }
        if let exposure = exposure(mode: st.st_mode, owner: st.st_uid, group: st.st_gid) {
            let mode = String(st.st_mode & 0o7777, radix: 8)
            return .failure(
                .exposed(
                    "\(path) can be read by \(exposure) (mode "
                        + "\(String(repeating: "0", count: max(0, 4 - mode.count)))\(mode)), "
                        + "and it holds a secret: run chmod 600 \(path)"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(.unreadable("cannot read \(path): \(String(cString: strerror(errno)))"))
            }
            if n == 0 { break }
            bytes += chunk[..<n]
            if bytes.count > 1 << 20 {
                return .failure(.invalid("\(path) is larger than 1 MiB; it cannot be a secret file"))
            }
        }
        return .success(bytes)
    }

    /// Who besides the owner may read a file with this mode; nil when nobody may.
    static func exposure(mode: mode_t, owner: uid_t, group: gid_t) -> String? {
        if mode & 0o007 != 0 { return "every user" }
        if mode & 0o070 != 0 {
            if owner == 0 && mode & 0o030 == 0 && isOurGroup(group) { return nil }
            return "the users of its group"
        }
        return nil
    }

    static func isOurGroup(_ group: gid_t) -> Bool {
        if getegid() == group { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let n = getgroups(count, &groups)
        return n > 0 && groups.prefix(Int(n)).contains(group)
    }

    /// A password file: its first line exactly as written (only the line break after it is removed).
    /// Nothing else is interpreted: `#`, `:`, quotes and spaces are part of the password.
    public static func firstLine(_ path: String) -> Result<String, Failure> {
        read(path).flatMap { bytes in
            var line = bytes.prefix { $0 != UInt8(ascii: "\n") }
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard !line.isEmpty else { return .failure(.invalid("\(path) is empty; its first line is the password")) }
            guard !line.contains(0) else { return .failure(.invalid("\(path) has a NUL byte in its first line")) }
            guard let text = String(validating: line, as: UTF8.self) else {
                return .failure(.invalid("the first line of \(path) is not UTF-8 text"))
            }
            return .success(text)
        }
    }
}

/// The `secrets.yaml` beside a configuration, read on the first `!secret` (the way ESPHome and Home
/// Assistant do it): a mapping of names to values, so a configuration can be shared without them.
///
/// Its problems are recorded once in the diagnostics; no message ever shows a value from it.
public final class SecretStore {
    public let file: String
    private let diagnostics: ConfigDiagnostics
    private var loaded: [String: String]?
    private var failed = false

    public init(file: String, diagnostics: ConfigDiagnostics) {
        self.file = file
        self.diagnostics = diagnostics
    }

    /// The store beside `configuration` (same directory, `secrets.yaml`).
    public convenience init(besides configuration: String, diagnostics: ConfigDiagnostics) {
        let directory = configuration.lastIndex(of: "/").map { String(configuration[..<$0]) } ?? "."
        self.init(file: (directory.isEmpty ? "" : directory) + "/secrets.yaml", diagnostics: diagnostics)
    }

    public func lookup(_ name: String) -> SecretLookup {
        guard let secrets = load() else { return .unavailable }
        if let value = secrets[name] { return .value(value) }
        let names = secrets.keys.sorted()
        return .missing("no secret '\(name)' in \(file)"
                        + (names.isEmpty ? " (it has none)" : "; it has \(names.joined(separator: ", "))"))
    }

    private func load() -> [String: String]? {
        if let loaded { return loaded }
        if failed { return nil }
        failed = true
        let bytes: [UInt8]
        switch SecretFile.read(file) {
        case .success(let b): bytes = b
        case .failure(let f):
            diagnostics.add(ConfigProblem(file: file, line: 0, path: "", message: f.description
                                          + "; !secret NAME reads NAME from secrets.yaml beside the configuration"))
            return nil
        }
        let parsed = YAML.parse(bytes)
        for e in parsed.errors {
            diagnostics.add(ConfigProblem(file: file, line: e.line, column: e.column, path: e.path, message: e.message))
        }
        guard let root = parsed.root, parsed.errors.isEmpty else { return nil }
        var secrets: [String: String] = [:]
        var ok = true
        switch root.value {
        case .mapping(let entries):
            for e in entries {
                switch e.value.value {
                case .scalar(let text, _): secrets[e.key] = text
                default:
                    ok = false
                    diagnostics.add(
                        ConfigProblem(
                            file: file, line: e.keyLine, column: e.keyColumn, path: e.key,
                            message: "a secret is one line of text (quote it if it has '#' or ': ')"))
                }
            }
        case .null:
            break
        default:
            ok = false
            diagnostics.add(
                ConfigProblem(
                    file: file, line: root.line, column: root.column, path: "",
                    message: "secrets.yaml is a mapping of names to values: mqtt_password: \"…\""))
        }
        guard ok else { return nil }
        failed = false
        loaded = secrets
        return secrets
    }
}
