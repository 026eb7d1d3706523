// The hub's backup archive: a POSIX ustar tar of a few known files, written and read here. By hand rather than
// through libarchive because the archive holds only plain files under fixed names, and the reader's job is mostly to
// refuse: a strict reader of that one shape is a few hundred lines with every refusal named, where libarchive would be
// one more C library on the hub's attack surface (it reads a dozen formats and compressions the hub never writes),
// still needing every check below on top. Any tar tool lists and unpacks the archive (`tar -tvf`).

/// One file of a backup: its name inside the archive (`BackupArchive.MemberName`) and its bytes.
public struct BackupMember: Sendable, Equatable {
    public var name: String
    public var bytes: [UInt8]

    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }
}

/// Why an uploaded archive is refused: what is wrong, and where (the member's name, or the byte offset).
public enum BackupArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The whole archive is larger than `BackupArchive.maximumSize`.
    case tooLarge(size: Int)
    /// A header block that is not a ustar header (bad checksum, magic, a field that is not octal).
    case malformedHeader(offset: Int, reason: String)
    /// A member whose data runs past the archive's end, or an archive without its end blocks.
    case truncated(String)
    /// A name with `..`, `.`, an empty part or a leading `/`, or bytes that are not printable ASCII.
    case unsafeName(String, reason: String)
    /// A hard or symbolic link, a directory, a device or any type but a regular file.
    case notAFile(String, type: String)
    /// A member larger than `BackupArchive.maximumMemberSize`.
    case memberTooLarge(String, size: Int)
    /// A name that is not one of the backup's files.
    case unknownMember(String)
    /// The same name twice.
    case duplicate(String)
    /// Bytes after the end blocks that are not zero.
    case trailingData(offset: Int)

    public var description: String {
        switch self {
        case .tooLarge(let size):
            return "the archive is \(size) bytes; a backup is at most \(BackupArchive.maximumSize)"
        case .malformedHeader(let offset, let reason):
            return "the block at byte \(offset) is not a ustar header: \(reason)"
        case .truncated(let what): return "the archive is cut short: \(what)"
        case .unsafeName(let name, let reason): return "the member '\(name)' is refused: \(reason)"
        case .notAFile(let name, let type):
            return "the member '\(name)' is \(type); a backup holds only regular files"
        case .memberTooLarge(let name, let size):
            return "the member '\(name)' is \(size) bytes; a member is at most \(BackupArchive.maximumMemberSize)"
        case .unknownMember(let name):
            return "the member '\(name)' is not part of a Hearth backup (\(BackupArchive.MemberName.summary))"
        case .duplicate(let name): return "the member '\(name)' is in the archive twice"
        case .trailingData(let offset): return "bytes that are not zero follow the archive's end, at byte \(offset)"
        }
    }
}

/// Writing and reading the backup's ustar archive.
public enum BackupArchive {
    /// The largest archive read: a hub's state and Matter storage are kilobytes; a thousand devices' state a few MB.
    public static let maximumSize = 16 << 20
    /// The largest member read.
    public static let maximumMemberSize = 8 << 20
    /// The most members read (the Matter storage is a few dozen files).
    public static let maximumMembers = 256
    static let block = 512

    /// The names a backup may hold.
    public enum MemberName {
        /// What a backup is: `hearth-backup <version>`. The first member.
        public static let manifest = "hearth-backup"
        /// The configuration, as the hub was started with it (the broker's credentials left out).
        public static let configuration = "hearth.yaml"
        /// The board file the configuration names.
        public static let board = "board.yaml"
        /// The engine's saved state: names, rooms, attributes.
        public static let state = "state/state.json"
        /// The folder of the Matter node's storage: fabrics, keys, endpoint numbers, the pairing values.
        public static let matterFolder = "state/matter/"

        static let summary =
            "\(manifest), \(configuration), \(board), \(state) and files under \(matterFolder)"

        /// Whether `name` is one of the backup's files: the fixed names, or a Matter storage file (letters, digits,
        /// `-`, `_` and `.`, not starting with `.`).
        public static func isKnown(_ name: String) -> Bool {
            if name == manifest || name == configuration || name == board || name == state { return true }
            guard name.hasPrefix(matterFolder) else { return false }
            return isStorageFileName(String(name.dropFirst(matterFolder.count)))
        }

        /// A Matter storage file's name as it may be written into the state directory.
        public static func isStorageFileName(_ file: String) -> Bool {
            guard !file.isEmpty, file.utf8.count <= 64, file.first != "." else { return false }
            return file.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                    || c == UInt8(ascii: "-") || c == UInt8(ascii: "_") || c == UInt8(ascii: ".")
            }
        }
    }

    // MARK: Writing

    /// The archive of `members`, in their order: a ustar header and the data padded to 512 bytes each, then two zero
    /// blocks. Names must be known and at most 100 bytes (`MemberName`); `modified` is seconds since 1970.
    public static func write(_ members: [BackupMember], modified: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        for member in members {
            out += header(name: member.name, size: member.bytes.count, modified: modified)
            out += member.bytes
            let padding = (block - member.bytes.count % block) % block
            out += [UInt8](repeating: 0, count: padding)
        }
        out += [UInt8](repeating: 0, count: 2 * block)
        return out
    }

    private static func header(name: String, size: Int, modified: Int) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: block)
        func put(_ text: String, at offset: Int, width: Int) {
            for (i, b) in text.utf8.prefix(width).enumerated() { h[offset + i] = b }
        }
        func octal(_ value: Int, at offset: Int, width: Int) {
            // width - 1 digits and a NUL, as POSIX writes numeric fields.
            var digits = String(value, radix: 8)
            digits = String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits
            put(digits, at: offset, width: width - 1)
        }
        put(name, at: 0, width: 100)
        octal(0o600, at: 100, width: 8)
        octal(0, at: 108, width: 8)
        octal(0, at: 116, width: 8)
        octal(size, at: 124, width: 12)
        octal(max(0, modified), at: 136, width: 12)
        h[156] = UInt8(ascii: "0")
        put("ustar", at: 257, width: 6)
        put("00", at: 263, width: 2)
        put("hearth", at: 265, width: 32)
        put("hearth", at: 297, width: 32)
        for i in 148..<156 { h[i] = UInt8(ascii: " ") }
        let sum = h.reduce(0) { $0 + Int($1) }
        octal(sum, at: 148, width: 7)
        h[155] = UInt8(ascii: " ")
        return h
    }

    // MARK: Reading

    /// The members of `bytes`, in the archive's order; every refusal is a `BackupArchiveError` naming what and where.
    public static func read(_ bytes: [UInt8]) throws(BackupArchiveError) -> [BackupMember] {
        guard bytes.count <= maximumSize else { throw .tooLarge(size: bytes.count) }
        var members: [BackupMember] = []
        var names: Set<String> = []
        var offset = 0
        while true {
            guard offset + block <= bytes.count else {
                throw .truncated(
                    members.isEmpty && bytes.isEmpty
                        ? "it is empty" : "it ends at byte \(bytes.count) without its two zero blocks")
            }
            let h = bytes[offset..<(offset + block)]
            if h.allSatisfy({ $0 == 0 }) {
                guard offset + 2 * block <= bytes.count,
                    bytes[(offset + block)..<(offset + 2 * block)].allSatisfy({ $0 == 0 })
                else {
                    throw .truncated("one zero block at byte \(offset) where the end needs two")
                }
                if let nonZero = bytes[(offset + 2 * block)...].firstIndex(where: { $0 != 0 }) {
                    throw .trailingData(offset: nonZero)
                }
                return members
            }
            let (name, size) = try readHeader(h, offset: offset)
            guard names.insert(name).inserted else { throw .duplicate(name) }
            guard members.count < maximumMembers else {
                throw .unknownMember("\(name) (more than \(maximumMembers) members)")
            }
            let start = offset + block
            guard size <= bytes.count - start else {
                throw .truncated("'\(name)' says \(size) bytes but \(bytes.count - start) follow its header")
            }
            members.append(BackupMember(name: name, bytes: Array(bytes[start..<(start + size)])))
            offset = start + (size + block - 1) / block * block
        }
    }

    private static func readHeader(_ h: ArraySlice<UInt8>, offset: Int) throws(BackupArchiveError) -> (String, Int) {
        let base = h.startIndex
        func field(_ at: Int, _ width: Int) -> ArraySlice<UInt8> { h[(base + at)..<(base + at + width)] }
        guard let stored = octal(field(148, 8)) else {
            throw .malformedHeader(offset: offset, reason: "its checksum field is not an octal number")
        }
        var sum = 0
        for (i, b) in h.enumerated() { sum += (148..<156).contains(i) ? 0x20 : Int(b) }
        guard stored == sum else {
            throw .malformedHeader(offset: offset, reason: "its checksum is \(stored), its bytes sum to \(sum)")
        }
        guard Array(field(257, 6)) == Array("ustar\0".utf8), Array(field(263, 2)) == Array("00".utf8) else {
            throw .malformedHeader(offset: offset, reason: "it is not POSIX ustar (magic 'ustar', version '00')")
        }
        let name = try memberName(prefix: field(345, 155), name: field(0, 100), offset: offset)
        let type = h[base + 156]
        switch type {
        case 0, UInt8(ascii: "0"): break
        case UInt8(ascii: "1"): throw .notAFile(name, type: "a hard link")
        case UInt8(ascii: "2"): throw .notAFile(name, type: "a symbolic link")
        case UInt8(ascii: "3"), UInt8(ascii: "4"): throw .notAFile(name, type: "a device")
        case UInt8(ascii: "5"): throw .notAFile(name, type: "a directory")
        case UInt8(ascii: "6"): throw .notAFile(name, type: "a FIFO")
        case UInt8(ascii: "x"), UInt8(ascii: "g"): throw .notAFile(name, type: "a pax extended header")
        case UInt8(ascii: "L"), UInt8(ascii: "K"): throw .notAFile(name, type: "a GNU long name")
        default: throw .notAFile(name, type: "of type \(type)")
        }
        guard let size = octal(field(124, 12)) else {
            throw .malformedHeader(offset: offset, reason: "the size of '\(name)' is not an octal number")
        }
        guard size <= maximumMemberSize else { throw .memberTooLarge(name, size: size) }
        guard MemberName.isKnown(name) else { throw .unknownMember(name) }
        return (name, size)
    }

    /// `prefix/name` (or `name`), each field up to its first NUL; refused unless it is a relative path of printable
    /// ASCII whose parts are neither empty, `.` nor `..`.
    private static func memberName(prefix: ArraySlice<UInt8>, name: ArraySlice<UInt8>, offset: Int)
        throws(BackupArchiveError) -> String
    {
        let p = prefix.prefix { $0 != 0 }, n = name.prefix { $0 != 0 }
        let bytes = p.isEmpty ? Array(n) : Array(p) + [UInt8(ascii: "/")] + Array(n)
        let shown = String(decoding: bytes.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        guard !bytes.isEmpty else { throw .malformedHeader(offset: offset, reason: "its name is empty") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .unsafeName(shown, reason: "a name is printable ASCII without spaces")
        }
        guard bytes.first != UInt8(ascii: "/") else { throw .unsafeName(shown, reason: "an absolute path") }
        for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if part.isEmpty { throw .unsafeName(shown, reason: "an empty part of the path ('//' or a trailing '/')") }
            if part.elementsEqual("..".utf8) { throw .unsafeName(shown, reason: "'..' leaves the backup's folder") }
            if part.elementsEqual(".".utf8) { throw .unsafeName(shown, reason: "'.' in the path") }
        }
        return shown
    }

    /// An octal number field: optional leading spaces, digits, then NULs or spaces to the end; nil otherwise.
    static func octal(_ field: ArraySlice<UInt8>) -> Int? {
        var value = 0, digits = 0, ended = false
        for b in field {
            if ended {
                guard b == 0 || b == 0x20 else { return nil }
            } else if b >= 0x30 && b <= 0x37 {
                guard digits < 16 else { return nil }
                value = value * 8 + Int(b - 0x30)
                digits += 1
            } else if b == 0x20 && digits == 0 {
                continue
            } else if b == 0 || b == 0x20 {
                ended = true
            } else {
                return nil
            }
        }
        return digits == 0 ? nil : value
    }
}
