public import HearthEngine
package import HearthJSON
#if canImport(Glibc)
import Glibc
#endif

/// What a hub keeps across restarts and power loss: user-set names, rooms and structures, writable
/// attributes, and the last on/off and level that "previous" start-up behaviour needs.
///
/// A save is atomic and durable: the new state goes to a temporary file that is flushed to disk, then
/// renamed over the old one, then the directory itself is flushed — so after a power cut the file is
/// either the old state or the new one, never a torn mix.
public final class StateStore: Sendable {
    public let directory: String
    public var file: String { "\(directory)/state.json" }

    public init(directory: String) { self.directory = directory }

    /// The saved state: nothing when there is no file yet; nothing, with a warning, when the file is corrupt
    /// (it does not parse as a state file), which is then moved aside so that it can be looked at and is never
    /// read again.
    ///
    /// A file that cannot be read (EIO from a failing SD card, a permission, a directory or a FIFO where the
    /// file should be) is not corrupt: it is left exactly as it is and the load throws, so that the hub does
    /// not start from the configuration and overwrite the saved state at its first save.
    public func load() throws(StateStoreError) -> (devices: [String: SavedDevice], warnings: [String]) {
        // O_NONBLOCK: a FIFO in the file's place must not hold up the start until someone writes to it.
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return ([:], []) }
            throw StateStoreError("open \(file)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StateStoreError("read \(file)") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StateStoreError("read \(file)", reason: info.st_mode & S_IFMT == S_IFDIR
                ? "it is a directory; the state file must be a regular file"
                : "it is not a regular file (a FIFO, socket or device)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StateStoreError("read \(file)")
            }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        if let devices = try? Self.decode(JSON.parse(bytes)) { return (devices, []) }
        let aside = "\(file).corrupt-\(time(nil))"
        rename(file, aside)
        return ([:], ["\(file) is corrupt; moved it to \(aside) and started from the configuration"])
    }

    /// Writes the state atomically and durably.
    public func save(_ devices: [String: SavedDevice]) throws(StateStoreError) {
        try save(bytes: Self.encode(devices))
    }

    func save(bytes: [UInt8]) throws(StateStoreError) {
        try makeDirectory(directory)
        let temporary = "\(file).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw StateStoreError("create \(temporary)") }
        // The first failure's errno, taken where it happens: close and unlink below may change errno.
        var failure: StateStoreError?
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = StateStoreError("write \(temporary)")
                break
            }
            offset += n
        }
        if failure == nil && fsync(fd) != 0 { failure = StateStoreError("flush \(temporary) to disk") }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, file) == 0 else { throw StateStoreError("rename \(temporary) to \(file)") }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    private func makeDirectory(_ path: String) throws(StateStoreError) {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/\(component)"
            if mkdir(partial, 0o750) != 0 && errno != EEXIST {
                throw StateStoreError("create the directory \(partial)")
            }
        }
    }

    // MARK: Format

    static let version = 1

    /// The whole file: `{"version":1,"devices":{…}}` with the devices in id order.
    package static func encode(_ devices: [String: SavedDevice]) -> [UInt8] {
        file(devices.sorted { $0.key < $1.key }.map { entry($0.key, $0.value) })
    }

    /// The file around device entries that are already in id order.
    static func file(_ entries: [[UInt8]]) -> [UInt8] {
        var out = Array(#"{"version":\#(version),"devices":{"#.utf8)
        for (i, e) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: e)
        }
        out.append(contentsOf: Array("}}".utf8))
        return out
    }

    /// One device's entry, `"id":{…}`: the unit the hub re-encodes when that device changes, so that a
    /// save does not re-encode a hundred devices for one that changed.
    static func entry(_ id: String, _ d: SavedDevice) -> [UInt8] {
        func value(_ v: SavedValue) -> JSON {
            switch v {
            case .null: .null
            case .bool(let b): .bool(b)
            case .int(let i): .int(i)
            case .string(let s): .string(s)
            case .structure(let f): .object(f.sorted { $0.key < $1.key }.map { ($0.key, value($0.value)) })
            case .list(let l): .array(l.map(value))
            }
        }
        var members: [(key: String, value: JSON)] = []
        if let n = d.name { members.append(("name", .string(n))) }
        if let r = d.roomID { members.append(("roomId", .string(r))) }
        if let s = d.structureID { members.append(("structureId", .string(s))) }
        members.append(("attributes", .object(d.attributes.sorted { $0.key < $1.key }.map { type, traits in
            (type, .object(traits.sorted { $0.key < $1.key }.map { trait, attributes in
                (trait, .object(attributes.sorted { $0.key < $1.key }.map { ($0.key, value($0.value)) }))
            }))
        })))
        if !d.tables.isEmpty {
            members.append(("tables", .object(d.tables.sorted { $0.key < $1.key }.map { type, traits in
                (type, .object(traits.sorted { $0.key < $1.key }.map { ($0.key, value($0.value)) }))
            })))
        }
        var out: [UInt8] = []
        JSON.writeString(id, to: &out)
        out.append(UInt8(ascii: ":"))
        JSON.object(members).write(to: &out)
        // Kept for every device between saves (`PersistenceService`): exactly as long as it is, not the doubling
        // growth's capacity, which would be most of it.
        return [UInt8](unsafeUninitializedCapacity: out.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: out)
        }
    }

    struct FormatError: Error {}

    static func savedValue(_ json: JSON) throws -> SavedValue {
        switch json {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .string(let s): .string(s)
        case .object(let members):
            .structure(
                Dictionary(try members.map { ($0.key, try savedValue($0.value)) }, uniquingKeysWith: { a, _ in a }))
        case .array(let items): .list(try items.map(savedValue))
        default: throw FormatError()
        }
    }

    package static func decode(_ json: JSON) throws -> [String: SavedDevice] {
        guard json["version"] == .int(version), case .object(let devices)? = json["devices"] else {
            throw FormatError()
        }
        var result: [String: SavedDevice] = [:]
        for (id, d) in devices {
            var saved = SavedDevice()
            if case .string(let n)? = d["name"] { saved.name = n }
            if case .string(let r)? = d["roomId"] { saved.roomID = r }
            if case .string(let s)? = d["structureId"] { saved.structureID = s }
            guard case .object(let types)? = d["attributes"] else { throw FormatError() }
            for (type, traitsJSON) in types {
                guard case .object(let traits) = traitsJSON else { throw FormatError() }
                for (trait, attributesJSON) in traits {
                    guard case .object(let attributes) = attributesJSON else { throw FormatError() }
                    for (name, v) in attributes {
                        saved.attributes[type, default: [:]][trait, default: [:]][name] = try savedValue(v)
                    }
                }
            }
            // Tables (groups, scenes) came later: a file without them is a file with none.
            switch d["tables"] {
            case nil: break
            case .object(let types)?:
                for (type, traitsJSON) in types {
                    guard case .object(let traits) = traitsJSON else { throw FormatError() }
                    for (trait, table) in traits { saved.tables[type, default: [:]][trait] = try savedValue(table) }
                }
            default: throw FormatError()
            }
            result[id] = saved
        }
        return result
    }
}

/// A state file that could not be read or written, with the operation and the system's reason.
public struct StateStoreError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    /// The errno of the failed call; 0 when ``reason`` says what was wrong instead.
    public var errno: Int32
    public var reason: String?

    /// The failure of the call just made: takes `errno` now, before anything else can change it.
    init(_ operation: String) {
        self.operation = operation
        self.errno = Glibc.errno
    }

    init(_ operation: String, reason: String) {
        self.operation = operation
        self.errno = 0
        self.reason = reason
    }

    public var description: String { "cannot \(operation): \(reason ?? String(cString: strerror(errno)))" }
}
