// DNS messages as Multicast DNS (RFC 6762) and DNS-SD (RFC 6763) use them: the header, questions with the
// unicast-response bit, records with the cache-flush bit, compressed names, and the record types a DNS-SD
// responder answers with (PTR, SRV, TXT, A, AAAA, NSEC). Written here rather than taken from a library because no
// Swift DNS codec runs without Foundation, and a responder needs only this much. The reader takes bytes from the
// network: it checks every length, pointer and count and throws `DNSMessageError` on anything wrong, never traps.

/// A domain name: labels of 1–63 bytes, at most 255 bytes on the wire. Compared as DNS does, ASCII letters
/// without regard to case.
public struct DNSName: Sendable, Hashable, CustomStringConvertible {
    public let labels: [[UInt8]]

    /// Labels as given; throws when one is empty or longer than 63 bytes, or the whole is longer than 255.
    public init(labels: [[UInt8]]) throws(DNSMessageError) {
        var length = 1
        for label in labels {
            guard !label.isEmpty, label.count <= 63 else { throw .invalidName("a label of \(label.count) bytes") }
            length += label.count + 1
        }
        guard length <= 255 else { throw .invalidName("\(length) bytes long") }
        self.labels = labels
    }

    /// Labels as strings, each one label whatever it contains (an instance name may have dots or spaces).
    public init(labels: [String]) throws(DNSMessageError) { try self.init(labels: labels.map { Array($0.utf8) }) }

    /// A dotted name: `_matterc._udp.local`.
    public init(_ dotted: String) throws(DNSMessageError) {
        try self.init(labels: dotted.split(separator: ".", omittingEmptySubsequences: true).map { Array($0.utf8) })
    }

    /// This name under `parent`: `[instance] + _matterc._udp.local`.
    public func appending(_ parent: DNSName) throws(DNSMessageError) -> DNSName {
        try DNSName(labels: labels + parent.labels)
    }

    public var description: String {
        labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".") + "."
    }

    /// The labels with ASCII letters lowered: what equality and hashing compare.
    var folded: [[UInt8]] { labels.map { $0.map(lowerASCII) } }

    public static func == (a: DNSName, b: DNSName) -> Bool {
        guard a.labels.count == b.labels.count else { return false }
        for (x, y) in zip(a.labels, b.labels) {
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) where lowerASCII(p) != lowerASCII(q) { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(folded) }

    /// Bytes on the wire, uncompressed.
    var wireLength: Int { labels.reduce(1) { $0 + $1.count + 1 } }
}

private func lowerASCII(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

/// Record and question types (RFC 1035, 2782, 3596, 4034), kept as numbers: a question may ask for any.
public struct DNSRecordType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let a = DNSRecordType(rawValue: 1)
    public static let ptr = DNSRecordType(rawValue: 12)
    public static let txt = DNSRecordType(rawValue: 16)
    public static let aaaa = DNSRecordType(rawValue: 28)
    public static let srv = DNSRecordType(rawValue: 33)
    public static let nsec = DNSRecordType(rawValue: 47)
    /// In a question only: every type.
    public static let any = DNSRecordType(rawValue: 255)

    public var description: String {
        switch self {
        case .a: "A"
        case .ptr: "PTR"
        case .txt: "TXT"
        case .aaaa: "AAAA"
        case .srv: "SRV"
        case .nsec: "NSEC"
        case .any: "ANY"
        default: "TYPE\(rawValue)"
        }
    }
}

/// The Internet class, and "any" (in questions).
public enum DNSClass {
    public static let internet: UInt16 = 1
    public static let any: UInt16 = 255
}

/// One question. `unicastResponse` is mDNS's QU bit, the class's top bit (RFC 6762 §5.4).
public struct DNSQuestion: Sendable, Hashable {
    public var name: DNSName
    public var type: DNSRecordType
    public var recordClass: UInt16
    public var unicastResponse: Bool

    public init(
        name: DNSName, type: DNSRecordType, recordClass: UInt16 = DNSClass.internet, unicastResponse: Bool = false
    ) {
        self.name = name
        self.type = type
        self.recordClass = recordClass & 0x7FFF
        self.unicastResponse = unicastResponse
    }
}

/// What a record says, by type; any other type is kept as its bytes.
public enum DNSRecordData: Sendable, Hashable {
    case a([UInt8])
    case aaaa([UInt8])
    case ptr(DNSName)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    /// Character strings of 0–255 bytes each (DNS-SD's `key=value` entries).
    case txt([[UInt8]])
    /// The next name and the types that exist at the record's name (RFC 4034 §4; mDNS uses it to say "no other").
    case nsec(next: DNSName, types: [DNSRecordType])
    case other(type: DNSRecordType, bytes: [UInt8])

    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ptr: .ptr
        case .srv: .srv
        case .txt: .txt
        case .nsec: .nsec
        case .other(let type, _): type
        }
    }
}

/// One resource record. `cacheFlush` is mDNS's bit in the class's top bit (RFC 6762 §10.2).
public struct DNSRecord: Sendable, Hashable {
    public var name: DNSName
    public var recordClass: UInt16
    public var cacheFlush: Bool
    public var ttl: UInt32
    public var data: DNSRecordData

    public init(name: DNSName, ttl: UInt32, data: DNSRecordData, cacheFlush: Bool = false,
                recordClass: UInt16 = DNSClass.internet) {
        self.name = name
        self.recordClass = recordClass & 0x7FFF
        self.cacheFlush = cacheFlush
        self.ttl = ttl
        self.data = data
    }

    public var type: DNSRecordType { data.type }

    /// The same record (name, type, class and data), whatever its TTL and cache-flush bit.
    public func isSameRecord(as other: DNSRecord) -> Bool {
        name == other.name && recordClass == other.recordClass && data == other.data
    }
}

/// A whole message.
public struct DNSMessage: Sendable, Hashable {
    public var id: UInt16
    /// QR, opcode, AA, TC, RD, RA, Z, AD, CD and RCODE as on the wire.
    public var flags: UInt16
    public var questions: [DNSQuestion]
    public var answers: [DNSRecord]
    public var authorities: [DNSRecord]
    public var additionals: [DNSRecord]

    public init(id: UInt16 = 0, flags: UInt16 = 0, questions: [DNSQuestion] = [], answers: [DNSRecord] = [],
                authorities: [DNSRecord] = [], additionals: [DNSRecord] = []) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// A response's flags as mDNS sends them: QR and AA.
    public static let responseFlags: UInt16 = 0x8400

    public var isResponse: Bool { flags & 0x8000 != 0 }
    public var opcode: UInt8 { UInt8((flags >> 11) & 0xF) }
    public var responseCode: UInt8 { UInt8(flags & 0xF) }
    public var isTruncated: Bool { flags & 0x0200 != 0 }
}

/// What is wrong with a message or a name.
public enum DNSMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The message ended where `what` needed more bytes.
    case truncated(what: String, offset: Int)
    /// A name on the wire is malformed: a reserved label type, a pointer that does not point back, a loop.
    case malformedName(String, offset: Int)
    /// A name given to build a message is not a DNS name.
    case invalidName(String)
    /// A record's data does not have its type's shape.
    case malformedRecord(DNSRecordType, String, offset: Int)
    /// Bytes left over after the last record the header announces.
    case trailingBytes(count: Int)
    /// The message is longer than any mDNS message may be.
    case tooLong(Int)

    public var description: String {
        switch self {
        case .truncated(let what, let offset): "message ends at byte \(offset) inside \(what)"
        case .malformedName(let why, let offset): "malformed name at byte \(offset): \(why)"
        case .invalidName(let why): "not a DNS name: \(why)"
        case .malformedRecord(let type, let why, let offset): "malformed \(type) record at byte \(offset): \(why)"
        case .trailingBytes(let count): "\(count) bytes after the last record"
        case .tooLong(let count): "\(count) bytes, more than the 9000 of the largest mDNS message"
        }
    }
}

extension DNSMessage {
    /// The largest message mDNS allows, over a jumbo-frame link (RFC 6762 §17).
    public static let maximumLength = 9000

    /// Reads a message; throws the first thing wrong with it.
    public init(decoding bytes: [UInt8]) throws(DNSMessageError) {
        guard bytes.count <= Self.maximumLength else { throw .tooLong(bytes.count) }
        var reader = DNSReader(bytes: bytes)
        id = try reader.u16("the header")
        flags = try reader.u16("the header")
        let counts = [try reader.u16("the header"), try reader.u16("the header"), try reader.u16("the header"),
                      try reader.u16("the header")]
        questions = []
        for _ in 0..<counts[0] {
            let name = try reader.name()
            let type = DNSRecordType(rawValue: try reader.u16("a question"))
            let rawClass = try reader.u16("a question")
            questions.append(
                DNSQuestion(name: name, type: type, recordClass: rawClass, unicastResponse: rawClass & 0x8000 != 0))
        }
        answers = try reader.records(Int(counts[1]))
        authorities = try reader.records(Int(counts[2]))
        additionals = try reader.records(Int(counts[3]))
        guard reader.offset == bytes.count else { throw .trailingBytes(count: bytes.count - reader.offset) }
    }

    /// The message on the wire, names compressed (RFC 1035 §4.1.4) except inside NSEC (RFC 6762 §18.14).
    public func encoded() -> [UInt8] {
        var writer = DNSWriter()
        writer.u16(id)
        writer.u16(flags)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            writer.u16(UInt16(clamping: count))
        }
        for question in questions.prefix(0xFFFF) {
            writer.name(question.name)
            writer.u16(question.type.rawValue)
            writer.u16(question.recordClass | (question.unicastResponse ? 0x8000 : 0))
        }
        for record in answers.prefix(0xFFFF) + authorities.prefix(0xFFFF) + additionals.prefix(0xFFFF) {
            writer.record(record)
        }
        return writer.bytes
    }
}

/// Reads the wire format, every read checked.
struct DNSReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func u8(_ what: String) throws(DNSMessageError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(what: what, offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ what: String) throws(DNSMessageError) -> UInt16 {
        guard bytes.count - offset >= 2 else { throw .truncated(what: what, offset: offset) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func u32(_ what: String) throws(DNSMessageError) -> UInt32 {
        let high = try u16(what)
        return UInt32(high) << 16 | UInt32(try u16(what))
    }

    mutating func take(_ count: Int, _ what: String) throws(DNSMessageError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw .truncated(what: what, offset: offset) }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// A name, following compression pointers. Each pointer must point before the label sequence it continues, so
    /// reading always ends (no loops), and the name may not pass 255 bytes.
    mutating func name() throws(DNSMessageError) -> DNSName {
        var labels: [[UInt8]] = []
        var length = 1
        var position = offset
        var resumeAt: Int? = nil
        var lowestStart = offset  // where the current run of labels started; a pointer must point below it
        while true {
            guard position < bytes.count else { throw .truncated(what: "a name", offset: position) }
            let byte = bytes[position]
            switch byte & 0xC0 {
            case 0x00:
                if byte == 0 {
                    offset = resumeAt ?? position + 1
                    return try DNSName(labels: labels)
                }
                let count = Int(byte)
                guard bytes.count - position - 1 >= count else { throw .truncated(what: "a label", offset: position) }
                length += count + 1
                guard length <= 255 else { throw .malformedName("longer than 255 bytes", offset: position) }
                labels.append(Array(bytes[(position + 1)...(position + count)]))
                position += count + 1
            case 0xC0:
                guard bytes.count - position >= 2 else { throw .truncated(what: "a name pointer", offset: position) }
                let target = Int(byte & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < lowestStart else {
                    throw .malformedName(
                        "a pointer to byte \(target), not before byte \(lowestStart)", offset: position)
                }
                if resumeAt == nil { resumeAt = position + 2 }
                lowestStart = target
                position = target
            default:
                throw .malformedName("label type 0x\(String(byte & 0xC0, radix: 16))", offset: position)
            }
        }
    }

    mutating func records(_ count: Int) throws(DNSMessageError) -> [DNSRecord] {
        var records: [DNSRecord] = []
        for _ in 0..<count { records.append(try record()) }
        return records
    }

    mutating func record() throws(DNSMessageError) -> DNSRecord {
        let name = try name()
        let type = DNSRecordType(rawValue: try u16("a record"))
        let rawClass = try u16("a record")
        let ttl = try u32("a record")
        let length = Int(try u16("a record"))
        let start = offset
        guard bytes.count - start >= length else { throw .truncated(what: "\(type) record data", offset: start) }
        let end = start + length
        // Data is read from a reader that ends where the record does, so no field runs into the next record; it
        // keeps the whole message before it for compression pointers.
        var inner = DNSReader(bytes: Array(bytes[..<end]), offset: start)
        let data: DNSRecordData
        switch type {
        case .a, .aaaa:
            let size = type == .a ? 4 : 16
            guard length == size else { throw .malformedRecord(type, "\(length) bytes of address", offset: start) }
            let address = try inner.take(size, "an address")
            data = type == .a ? .a(address) : .aaaa(address)
        case .ptr:
            data = .ptr(try inner.name())
        case .srv:
            let priority = try inner.u16("SRV data")
            let weight = try inner.u16("SRV data")
            let port = try inner.u16("SRV data")
            data = .srv(priority: priority, weight: weight, port: port, target: try inner.name())
        case .txt:
            var strings: [[UInt8]] = []
            while inner.offset < end {
                let count = Int(try inner.u8("a TXT string"))
                strings.append(try inner.take(count, "a TXT string"))
            }
            data = .txt(strings)
        case .nsec:
            let next = try inner.name()
            var types: [DNSRecordType] = []
            var lastWindow = -1
            while inner.offset < end {
                let window = Int(try inner.u8("an NSEC bitmap"))
                let count = Int(try inner.u8("an NSEC bitmap"))
                guard window > lastWindow else {
                    throw .malformedRecord(type, "window \(window) out of order", offset: inner.offset)
                }
                guard (1...32).contains(count) else {
                    throw .malformedRecord(type, "a bitmap of \(count) bytes", offset: inner.offset)
                }
                lastWindow = window
                for (index, bits) in try inner.take(count, "an NSEC bitmap").enumerated() {
                    for bit in 0..<8 where bits & (0x80 >> bit) != 0 {
                        types.append(DNSRecordType(rawValue: UInt16(window << 8 | index << 3 | bit)))
                    }
                }
            }
            data = .nsec(next: next, types: types)
        default:
            data = .other(type: type, bytes: try inner.take(length, "record data"))
        }
        guard inner.offset == end else {
            throw .malformedRecord(type, "\(end - inner.offset) bytes of data left over", offset: inner.offset)
        }
        offset = end
        return DNSRecord(name: name, ttl: ttl, data: data, cacheFlush: rawClass & 0x8000 != 0, recordClass: rawClass)
    }
}

/// Writes the wire format, remembering where each name suffix was written for compression.
struct DNSWriter {
    var bytes: [UInt8] = []
    private var suffixes: [[[UInt8]]: Int] = [:]

    mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
    mutating func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF)) }

    mutating func name(_ name: DNSName, compress: Bool = true) {
        let folded = name.folded
        for index in name.labels.indices {
            let suffix = Array(folded[index...])
            if compress, let at = suffixes[suffix] {
                u16(0xC000 | UInt16(at))
                return
            }
            // A pointer has 14 bits: suffixes written further in are not offered for compression.
            if compress, bytes.count < 0x3FFF { suffixes[suffix] = bytes.count }
            bytes.append(UInt8(name.labels[index].count))
            bytes += name.labels[index]
        }
        bytes.append(0)
    }

    mutating func record(_ record: DNSRecord) {
        name(record.name)
        u16(record.type.rawValue)
        u16(record.recordClass | (record.cacheFlush ? 0x8000 : 0))
        u32(record.ttl)
        let lengthAt = bytes.count
        u16(0)
        switch record.data {
        case .a(let address), .aaaa(let address): bytes += address
        case .ptr(let target): name(target)
        case .srv(let priority, let weight, let port, let target):
            u16(priority)
            u16(weight)
            u16(port)
            name(target)
        case .txt(let strings):
            for string in strings {
                let kept = string.prefix(255)
                bytes.append(UInt8(kept.count))
                bytes += kept
            }
        case .nsec(let next, let types):
            name(next, compress: false)
            var windows: [UInt8: [UInt8]] = [:]
            for type in types {
                let window = UInt8(type.rawValue >> 8), low = Int(type.rawValue & 0xFF)
                var bitmap = windows[window] ?? []
                if bitmap.count <= low / 8 { bitmap += [UInt8](repeating: 0, count: low / 8 + 1 - bitmap.count) }
                bitmap[low / 8] |= 0x80 >> UInt8(low % 8)
                windows[window] = bitmap
            }
            for window in windows.keys.sorted() {
                bytes += [window, UInt8(windows[window]!.count)] + windows[window]!
            }
        case .other(_, let data): bytes += data
        }
        let length = bytes.count - lengthAt - 2
        bytes[lengthAt] = UInt8((length >> 8) & 0xFF)
        bytes[lengthAt + 1] = UInt8(length & 0xFF)
    }
}
