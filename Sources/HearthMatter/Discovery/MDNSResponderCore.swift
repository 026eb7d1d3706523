// What a Multicast DNS responder (RFC 6762) decides, without sockets or timers: which records a set of DNS-SD
// services and a host stand for, what to answer to a query and to whom, when to announce and when to say goodbye.
// Time is a number of milliseconds passed in, so every rule is tested step by step; `MDNSResponder` runs this over
// sockets. Left out: probing and conflict resolution (Matter's instance names are random or derived from a fabric,
// so they are unique by construction), and the 20–120 ms delay before answering a shared record.

/// Whether a packet goes over IPv4 or IPv6.
public enum MDNSAddressFamily: Sendable, Hashable { case ipv4, ipv6 }

/// One interface the responder works on, with the addresses its A and AAAA records give.
public struct MDNSInterface: Sendable, Hashable {
    public var name: String
    /// 4-byte addresses.
    public var ipv4: [[UInt8]]
    /// 16-byte addresses.
    public var ipv6: [[UInt8]]
    /// The networks on the link, as address and prefix length: a query from outside them is not answered.
    public var networks: [Network]

    public struct Network: Sendable, Hashable {
        public var address: [UInt8]
        public var prefixLength: Int
        public init(address: [UInt8], prefixLength: Int) {
            self.address = address
            self.prefixLength = prefixLength
        }

        public func contains(_ other: [UInt8]) -> Bool {
            guard other.count == address.count, (0...(address.count * 8)).contains(prefixLength) else { return false }
            for bit in 0..<prefixLength where (address[bit / 8] ^ other[bit / 8]) & (0x80 >> UInt8(bit % 8)) != 0 {
                return false
            }
            return true
        }
    }

    public init(name: String, ipv4: [[UInt8]] = [], ipv6: [[UInt8]] = [], networks: [Network]? = nil) {
        self.name = name
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.networks =
            networks
            ?? (ipv4.map { Network(address: $0, prefixLength: 24) }
                + ipv6.map { Network(address: $0, prefixLength: 64) })
    }

    /// Whether `address` (4 or 16 bytes) is on this link: in one of its networks, or IPv6 link-local (fe80::/10).
    /// RFC 6762 §11: a responder answers only its link, so that it is no reflector for the wider network.
    public func isOnLink(_ address: [UInt8]) -> Bool {
        if address.count == 16, address[0] == 0xFE, address[1] & 0xC0 == 0x80 { return true }
        return networks.contains { $0.contains(address) }
    }
}

/// Where a query came from: which interface and family it arrived on, and the sender's UDP port (5353 for a
/// Multicast DNS querier, any other for a one-shot "legacy" resolver, which is answered by unicast).
public struct MDNSQuerySource: Sendable, Hashable {
    public var interface: String
    public var family: MDNSAddressFamily
    public var port: Int
    /// The sender's address (4 or 16 bytes); nil when not known, and then taken as on the link.
    public var address: [UInt8]?
    public init(interface: String, family: MDNSAddressFamily, port: Int, address: [UInt8]? = nil) {
        self.interface = interface
        self.family = family
        self.port = port
        self.address = address
    }
}

/// A message to send on one interface and family: to the mDNS group, or back to the query's sender.
public struct MDNSPacket: Sendable, Hashable {
    public enum Destination: Sendable, Hashable {
        case multicast
        case querier
    }
    public var interface: String
    public var family: MDNSAddressFamily
    public var destination: Destination
    public var message: DNSMessage
}

/// Counts of what the responder did and refused, for logs and tests.
public struct MDNSStatistics: Sendable, Hashable {
    public var received = 0
    public var malformed = 0
    /// Queries dropped because their interface's answer budget was spent.
    public var rateLimited = 0
    /// Queries from an address not on the interface's link.
    public var offLink = 0
    public var answered = 0
    public var sent = 0
}

/// The responder's decisions.
public struct MDNSResponderCore: Sendable {
    /// RFC 6762 §10: 120 s for records naming a host (SRV, A, AAAA), 75 minutes for the others.
    public static let hostRecordTTL: UInt32 = 120
    public static let otherRecordTTL: UInt32 = 4500
    /// A legacy resolver caches what it gets for at most this long (RFC 6762 §6.7).
    static let legacyTTL: UInt32 = 10
    /// When announcements go out after a service appears or changes, from then: at least two, one second apart,
    /// the interval then doubling (RFC 6762 §8.3).
    public static let announcementOffsets: [Int64] = [0, 1000, 3000]
    /// A record is multicast on an interface at most once a second (RFC 6762 §6).
    static let multicastInterval: Int64 = 1000
    /// Unicast answers per interface: a burst of this many, refilled at this many per second, so that a flood of
    /// queries cannot make the responder send without bound.
    static let unicastBurst = 20
    static let unicastPerSecond = 10
    /// Bytes of DNS message per packet: fits a 1500-byte Ethernet frame under IPv6 and UDP headers.
    static let packetLimit = 1440

    public let hostName: DNSName
    public private(set) var interfaces: [MDNSInterface]
    public private(set) var services: [DNSName: DNSSDService] = [:]
    public private(set) var statistics = MDNSStatistics()

    private var announcements: [DNSName: (due: Int64, sent: Int)] = [:]
    private var lastMulticast: [MulticastKey: Int64] = [:]
    private var unicastBudget: [String: (tokens: Int, at: Int64)] = [:]

    private struct MulticastKey: Hashable {
        var interface: String
        var family: MDNSAddressFamily
        var name: DNSName
        var data: DNSRecordData
    }

    static let servicesName = try! DNSName("_services._dns-sd._udp.local")

    /// - Parameter hostLabel: the host's label; its name is `<hostLabel>.local`.
    public init(hostLabel: String, interfaces: [MDNSInterface]) throws(DNSMessageError) {
        hostName = try DNSName(labels: [hostLabel, "local"])
        self.interfaces = interfaces
    }

    // MARK: services

    /// Adds `service`, or updates the one with its instance name: records it no longer has are withdrawn at once
    /// (TTL 0), and the new ones are announced now and again at `announcementOffsets`.
    public mutating func advertise(_ service: DNSSDService, now: Int64) throws(DNSMessageError) -> [MDNSPacket] {
        try service.validate()
        let key = try service.instanceName()
        let old = services[key]
        services[key] = service
        // Records the update drops (a subtype, an old TXT) are withdrawn; `goodbye` keeps those still advertised.
        var packets: [MDNSPacket] = []
        if let old { packets = goodbye(records(of: old)) }
        announcements[key] = (due: now, sent: 0)
        return packets + due(now: now)
    }

    /// Removes the service with `service`'s instance name, saying goodbye (its records with TTL 0).
    public mutating func withdraw(_ service: DNSSDService) -> [MDNSPacket] {
        guard let key = try? service.instanceName(), let old = services.removeValue(forKey: key) else { return [] }
        announcements[key] = nil
        return goodbye(records(of: old))
    }

    /// Goodbyes for every service and the host's addresses: what to send before closing the sockets.
    public mutating func shutdown() -> [MDNSPacket] {
        let all = services.values.flatMap { records(of: $0) }
        services = [:]
        announcements = [:]
        var packets = goodbye(all)
        for interface in interfaces {
            for family in [MDNSAddressFamily.ipv4, .ipv6] {
                let addresses = addressRecords(on: interface).map { record in var r = record; r.ttl = 0; return r }
                if !addresses.isEmpty { packets += [packet(interface.name, family, .multicast, answers: addresses)] }
            }
        }
        statistics.sent += packets.count
        return packets
    }

    /// Replaces an interface's addresses (when they change): the new A and AAAA records are announced with the
    /// services.
    public mutating func update(_ interface: MDNSInterface, now: Int64) -> [MDNSPacket] {
        guard let index = interfaces.firstIndex(where: { $0.name == interface.name }) else { return [] }
        interfaces[index] = interface
        for key in services.keys { announcements[key] = (due: now, sent: 0) }
        return due(now: now)
    }

    // MARK: time

    /// When `due(now:)` next has something to send, if ever.
    public var nextDeadline: Int64? { announcements.values.map(\.due).min() }

    /// The announcements due by `now`.
    public mutating func due(now: Int64) -> [MDNSPacket] {
        var packets: [MDNSPacket] = []
        for key in announcements.keys.sorted(by: { $0.description < $1.description }) {
            guard let entry = announcements[key], entry.due <= now, let service = services[key] else { continue }
            for interface in interfaces {
                for family in [MDNSAddressFamily.ipv4, .ipv6] {
                    let answers = records(of: service) + addressRecords(on: interface)
                    for record in answers {
                        lastMulticast[
                            MulticastKey(
                                interface: interface.name, family: family, name: record.name, data: record.data)] = now
                    }
                    packets.append(packet(interface.name, family, .multicast, answers: answers))
                }
            }
            let sent = entry.sent + 1
            announcements[key] = sent < Self.announcementOffsets.count
                ? (due: now + Self.announcementOffsets[sent] - Self.announcementOffsets[sent - 1], sent: sent) : nil
        }
        statistics.sent += packets.count
        return packets
    }

    // MARK: queries

    /// Reads a packet from the network and answers it; a malformed packet is counted and dropped.
    public mutating func receive(_ bytes: [UInt8], from source: MDNSQuerySource, now: Int64) -> [MDNSPacket] {
        statistics.received += 1
        guard let message = try? DNSMessage(decoding: bytes) else {
            statistics.malformed += 1
            return []
        }
        return answer(message, from: source, now: now)
    }

    /// The answer to a query (RFC 6762 §6): nothing to a response or a query of another opcode; to a one-shot
    /// resolver (source port ≠ 5353) a unicast reply echoing its id and questions, TTLs at most 10 s and no
    /// cache-flush bits; to questions that all ask for a unicast reply, one; otherwise a multicast response without
    /// the records the querier already knows (known-answer suppression) or multicast in the last second.
    public mutating func answer(_ query: DNSMessage, from source: MDNSQuerySource, now: Int64) -> [MDNSPacket] {
        guard !query.isResponse, query.opcode == 0, query.responseCode == 0,
              let interface = interfaces.first(where: { $0.name == source.interface })
        else { return [] }
        if let address = source.address, !interface.isOnLink(address) {
            statistics.offLink += 1
            return []
        }
        let legacy = source.port != 5353
        let unicast = legacy || (!query.questions.isEmpty && query.questions.allSatisfy(\.unicastResponse))

        var answers: [DNSRecord] = []
        let available = allRecords(on: interface)
        for question in query.questions
        where question.recordClass == DNSClass.internet || question.recordClass == DNSClass.any {
            for record in available
            where record.name == question.name && (question.type == .any || question.type == record.type)
                && !answers.contains(where: { $0.isSameRecord(as: record) }) {
                // Known-answer suppression (RFC 6762 §7.1): the querier holds it with at least half its TTL left.
                if query.answers.contains(where: { $0.isSameRecord(as: record) && $0.ttl >= record.ttl / 2 }) {
                    continue
                }
                answers.append(record)
            }
        }
        if !unicast {
            answers.removeAll { record in
                let last = lastMulticast[
                    MulticastKey(interface: interface.name, family: source.family, name: record.name, data: record.data)
                ]
                return last.map { now - $0 < Self.multicastInterval } ?? false
            }
        }
        guard !answers.isEmpty else { return [] }

        var additionals: [DNSRecord] = []
        func add(_ record: DNSRecord) {
            if !answers.contains(where: { $0.isSameRecord(as: record) })
                && !additionals.contains(where: { $0.isSameRecord(as: record) })
            {
                additionals.append(record)
            }
        }
        for record in answers {
            switch record.data {
            case .ptr(let instance):
                for r in available where r.name == instance && (r.type == .srv || r.type == .txt) { add(r) }
                if available.contains(where: { $0.name == instance && $0.type == .srv }) {
                    addressRecords(on: interface).forEach(add)
                }
            case .srv:
                addressRecords(on: interface).forEach(add)
            default:
                break
            }
        }

        if unicast {
            var budget = unicastBudget[interface.name] ?? (tokens: Self.unicastBurst, at: now)
            let refill = Int((now - budget.at) * Int64(Self.unicastPerSecond) / 1000)
            if refill > 0 { budget = (tokens: min(Self.unicastBurst, budget.tokens + refill), at: now) }
            guard budget.tokens > 0 else {
                unicastBudget[interface.name] = budget
                statistics.rateLimited += 1
                return []
            }
            budget.tokens -= 1
            unicastBudget[interface.name] = budget
        } else {
            for record in answers + additionals {
                lastMulticast[
                    MulticastKey(interface: interface.name, family: source.family, name: record.name, data: record.data)
                ] = now
            }
        }
        statistics.answered += 1
        statistics.sent += 1
        if legacy {
            func forLegacy(_ record: DNSRecord) -> DNSRecord {
                var r = record
                r.cacheFlush = false
                r.ttl = min(r.ttl, Self.legacyTTL)
                return r
            }
            // At most a few questions are echoed: a resolver asks one, and a flood of them must not cost a reply's
            // size.
            var reply = DNSMessage(
                id: query.id, flags: DNSMessage.responseFlags, questions: Array(query.questions.prefix(8)),
                answers: answers.map(forLegacy), additionals: additionals.map(forLegacy))
            Self.fit(&reply)
            return [MDNSPacket(interface: interface.name, family: source.family, destination: .querier, message: reply)]
        }
        return [
            packet(
                interface.name, source.family, unicast ? .querier : .multicast, answers: answers,
                additionals: additionals)
        ]
    }

    // MARK: records

    /// Every record `service` stands for (the host's addresses aside).
    func records(of service: DNSSDService) -> [DNSRecord] {
        guard let instance = try? service.instanceName(), let type = try? service.typeName(),
              let subtypes = try? service.subtypeNames() else { return [] }
        var records = [DNSRecord(name: Self.servicesName, ttl: Self.otherRecordTTL, data: .ptr(type)),
                       DNSRecord(name: type, ttl: Self.otherRecordTTL, data: .ptr(instance))]
        records += subtypes.map { DNSRecord(name: $0, ttl: Self.otherRecordTTL, data: .ptr(instance)) }
        records.append(
            DNSRecord(
                name: instance, ttl: Self.hostRecordTTL,
                data: .srv(priority: 0, weight: 0, port: service.port, target: hostName), cacheFlush: true))
        // A TXT record has at least one string, empty when there is nothing to say (RFC 6763 §6.1).
        let txt = service.txt.isEmpty ? [[]] : service.txt.map { Array($0.utf8) }
        records.append(DNSRecord(name: instance, ttl: Self.otherRecordTTL, data: .txt(txt), cacheFlush: true))
        return records
    }

    func addressRecords(on interface: MDNSInterface) -> [DNSRecord] {
        interface.ipv4.map { DNSRecord(name: hostName, ttl: Self.hostRecordTTL, data: .a($0), cacheFlush: true) }
            + interface.ipv6.map {
                DNSRecord(name: hostName, ttl: Self.hostRecordTTL, data: .aaaa($0), cacheFlush: true)
            }
    }

    func allRecords(on interface: MDNSInterface) -> [DNSRecord] {
        var all: [DNSRecord] = []
        for key in services.keys.sorted(by: { $0.description < $1.description }) {
            for record in records(of: services[key]!) where !all.contains(where: { $0.isSameRecord(as: record) }) {
                all.append(record)
            }
        }
        return all + addressRecords(on: interface)
    }

    private mutating func goodbye(_ records: [DNSRecord]) -> [MDNSPacket] {
        // The `_services._dns-sd._udp` PTR stays while another service of the same type does.
        let stillShared = Set(services.values.flatMap { self.records(of: $0) }.map { DNSRecordKey($0) })
        let leaving = records.filter { !stillShared.contains(DNSRecordKey($0)) }.map { record in
            var r = record
            r.ttl = 0
            return r
        }
        guard !leaving.isEmpty else { return [] }
        var packets: [MDNSPacket] = []
        for interface in interfaces {
            for family in [MDNSAddressFamily.ipv4, .ipv6] {
                packets.append(packet(interface.name, family, .multicast, answers: leaving))
            }
        }
        statistics.sent += packets.count
        return packets
    }

    private func packet(_ interface: String, _ family: MDNSAddressFamily, _ destination: MDNSPacket.Destination,
                        answers: [DNSRecord], additionals: [DNSRecord] = []) -> MDNSPacket {
        var message = DNSMessage(flags: DNSMessage.responseFlags, answers: answers, additionals: additionals)
        Self.fit(&message)
        return MDNSPacket(interface: interface, family: family, destination: destination, message: message)
    }

    /// Drops additional records, then answers, then echoed questions from the end until the message fits a packet.
    static func fit(_ message: inout DNSMessage) {
        while message.encoded().count > packetLimit {
            if !message.additionals.isEmpty { message.additionals.removeLast() }
            else if message.answers.count > 1 { message.answers.removeLast() }
            else if message.questions.count > 1 { message.questions.removeLast() }
            else { break }
        }
    }
}

/// A record's identity for comparisons in a set: name and data (TTL and cache-flush aside).
private struct DNSRecordKey: Hashable {
    var name: DNSName
    var data: DNSRecordData
    init(_ record: DNSRecord) {
        name = record.name
        data = record.data
    }
}
