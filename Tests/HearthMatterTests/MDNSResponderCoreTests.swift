import HearthMatter
import Testing

/// Matter's service records and the responder's decisions, on times given in milliseconds.
@Suite struct MDNSResponderCoreTests {
    static let commissionable = MatterServiceNames.commissionable(
        instance: "DD200C20D25AE5F7", discriminator: 3840, vendorID: 0xFFF1, productID: 0x8000, deviceType: 14,
        deviceName: "Hearth hub", commissioningMode: .basic,
        session: .init(idleInterval: 500, activeInterval: 300, activeThreshold: 4000))
    static let eth0 = MDNSInterface(
        name: "eth0", ipv4: [[192, 168, 1, 20]],
        ipv6: [[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xFF, 0xFE, 0x33, 0x44, 0x55]])
    static let instance = try! DNSName("DD200C20D25AE5F7._matterc._udp.local")
    static let byDiscriminator = try! DNSName("_L3840._sub._matterc._udp.local")

    func responder() throws -> MDNSResponderCore {
        try MDNSResponderCore(hostLabel: "001122334455", interfaces: [Self.eth0])
    }

    func query(_ name: DNSName, _ type: DNSRecordType, unicast: Bool = false, known: [DNSRecord] = [], id: UInt16 = 0)
        -> DNSMessage
    {
        DNSMessage(id: id, questions: [DNSQuestion(name: name, type: type, unicastResponse: unicast)], answers: known)
    }

    static let mdns = MDNSQuerySource(interface: "eth0", family: .ipv4, port: 5353)

    @Test func theCommissionableServiceHasMattersSubtypesAndTXT() {
        let service = Self.commissionable
        #expect(service.type == "_matterc._udp" && service.port == 5540)
        #expect(service.subtypes == ["_L3840", "_S15", "_V65521", "_T14", "_CM"])
        #expect(
            service.txt == [
                "D=3840", "VP=65521+32768", "CM=1", "DT=14", "DN=Hearth hub", "SII=500", "SAI=300", "SAT=4000", "T=0"
            ])
        let closed = MatterServiceNames.commissionable(instance: "A", discriminator: 0xF00, vendorID: 1, productID: 2,
                                                       deviceType: nil, deviceName: nil, commissioningMode: .disabled)
        #expect(closed.subtypes == ["_L3840", "_S15", "_V1"])
        #expect(closed.txt == ["D=3840", "VP=1+2", "CM=0", "T=0"])
        #expect(MatterServiceNames.shortDiscriminator(0x123) == 1)
    }

    @Test func theOperationalServiceIsNamedByFabricAndNode() {
        let service = MatterServiceNames.operational(
            compressedFabricID: 0x87E1_B004_E235_A130, nodeID: 0x8FC7_7724_01CD_0696,
            session: .init(idleInterval: 500))
        #expect(service.instance == "87E1B004E235A130-8FC7772401CD0696")
        #expect(service.type == "_matter._tcp")
        #expect(service.subtypes == ["_I87E1B004E235A130"])
        #expect(service.txt == ["SII=500", "T=0"])
        #expect(
            MatterServiceNames.operational(compressedFabricID: 1, nodeID: 2).instance
                == "0000000000000001-0000000000000002")
        #expect(MatterServiceNames.hostLabel(macAddress: [0xB8, 0x27, 0xEB, 0x0A, 0x1B, 0x2C]) == "B827EB0A1B2C")
    }

    @Test func aServiceIsAnnouncedThreeTimesOnEachInterfaceAndFamily() throws {
        var core = try responder()
        let first = try core.advertise(Self.commissionable, now: 10_000)
        #expect(first.map(\.family) == [.ipv4, .ipv6])
        #expect(first.allSatisfy { $0.destination == .multicast && $0.interface == "eth0" })
        let records = first[0].message.answers
        #expect(records.contains(DNSRecord(name: Self.byDiscriminator, ttl: 4500, data: .ptr(Self.instance))))
        #expect(
            records.contains(
                DNSRecord(name: try DNSName("_CM._sub._matterc._udp.local"), ttl: 4500, data: .ptr(Self.instance))))
        #expect(records.contains { $0.name == Self.instance && $0.type == .srv && $0.cacheFlush })
        #expect(
            records.contains(DNSRecord(name: core.hostName, ttl: 120, data: .a([192, 168, 1, 20]), cacheFlush: true)))
        #expect(records.contains { $0.type == .aaaa })
        #expect(core.nextDeadline == 11_000)
        #expect(core.due(now: 10_999).isEmpty)
        #expect(core.due(now: 11_000).count == 2)
        #expect(core.nextDeadline == 13_000)
        #expect(core.due(now: 12_999).isEmpty)
        #expect(core.due(now: 13_000).count == 2)
        #expect(core.nextDeadline == nil)
    }

    @Test func aQueryBySubtypeIsAnsweredWithTheServiceAndAddresses() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let reply = core.answer(query(Self.byDiscriminator, .ptr), from: Self.mdns, now: 5_000)
        #expect(reply.count == 1)
        #expect(reply[0].destination == .multicast && reply[0].family == .ipv4)
        #expect(
            reply[0].message.answers == [DNSRecord(name: Self.byDiscriminator, ttl: 4500, data: .ptr(Self.instance))])
        #expect(Set(reply[0].message.additionals.map(\.type)) == [.srv, .txt, .a, .aaaa])
        let txt = reply[0].message.additionals.first { $0.type == .txt }
        #expect(txt?.data == .txt(Self.commissionable.txt.map { Array($0.utf8) }))
        // Another discriminator, or another service type: nothing.
        #expect(
            core.answer(query(try DNSName("_L1._sub._matterc._udp.local"), .ptr), from: Self.mdns, now: 5_000).isEmpty)
        #expect(core.answer(query(try DNSName("_matter._tcp.local"), .ptr), from: Self.mdns, now: 5_000).isEmpty)
    }

    @Test func aRecordIsMulticastAtMostOnceASecond() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        _ = core.due(now: 1_000)
        _ = core.due(now: 3_000)
        // Not just after an announcement,
        #expect(core.answer(query(Self.instance, .txt), from: Self.mdns, now: 3_500).isEmpty)
        // nor just after an answer.
        #expect(core.answer(query(Self.instance, .srv), from: Self.mdns, now: 4_000).count == 1)
        #expect(core.answer(query(Self.instance, .srv), from: Self.mdns, now: 4_999).isEmpty)
        #expect(core.answer(query(Self.instance, .srv), from: Self.mdns, now: 5_000).count == 1)
    }

    @Test func knownAnswersWithHalfTheirTTLLeftAreNotRepeated() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let known = DNSRecord(name: Self.byDiscriminator, ttl: 2250, data: .ptr(Self.instance))
        #expect(core.answer(query(Self.byDiscriminator, .ptr, known: [known]), from: Self.mdns, now: 10_000).isEmpty)
        var stale = known
        stale.ttl = 2249
        #expect(core.answer(query(Self.byDiscriminator, .ptr, known: [stale]), from: Self.mdns, now: 10_000).count == 1)
    }

    @Test func aOneShotQueryFromAnotherPortGetsAUnicastReplyEchoingIt() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let legacy = MDNSQuerySource(interface: "eth0", family: .ipv6, port: 49_152)
        let reply = core.answer(query(Self.byDiscriminator, .ptr, id: 0x1234), from: legacy, now: 100)
        #expect(reply.count == 1)
        #expect(reply[0].destination == .querier && reply[0].family == .ipv6)
        #expect(reply[0].message.id == 0x1234)
        #expect(reply[0].message.questions == [DNSQuestion(name: Self.byDiscriminator, type: .ptr)])
        let all = reply[0].message.answers + reply[0].message.additionals
        #expect(all.allSatisfy { $0.ttl <= 10 && !$0.cacheFlush })
        #expect(all.contains { $0.type == .srv })
    }

    @Test func questionsAskingForUnicastAreAnsweredToTheQuerier() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let reply = core.answer(query(Self.instance, .any, unicast: true), from: Self.mdns, now: 100)
        #expect(reply.count == 1 && reply[0].destination == .querier)
        #expect(Set(reply[0].message.answers.map(\.type)) == [.srv, .txt])
    }

    @Test func aFloodOfUnicastQueriesGetsABoundedNumberOfReplies() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let legacy = MDNSQuerySource(interface: "eth0", family: .ipv4, port: 40_000)
        var replies = 0
        for _ in 0..<1000 { replies += core.answer(query(Self.byDiscriminator, .ptr), from: legacy, now: 10_000).count }
        #expect(replies == 20)
        #expect(core.statistics.rateLimited == 980)
        for _ in 0..<1000 { replies += core.answer(query(Self.byDiscriminator, .ptr), from: legacy, now: 11_000).count }
        #expect(replies == 30)
    }

    @Test func responsesOtherInterfacesAndGarbageAreIgnored() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        var response = query(Self.byDiscriminator, .ptr)
        response.flags = DNSMessage.responseFlags
        #expect(core.answer(response, from: Self.mdns, now: 9_000).isEmpty)
        let wlan = MDNSQuerySource(interface: "wlan0", family: .ipv4, port: 5353)
        #expect(core.answer(query(Self.byDiscriminator, .ptr), from: wlan, now: 9_000).isEmpty)
        #expect(core.receive([0xFF, 0x00, 0x12], from: Self.mdns, now: 9_000).isEmpty)
        #expect(core.statistics.malformed == 1)
    }

    @Test func queriesFromOffTheLinkAreNotAnswered() throws {
        var core = try MDNSResponderCore(
            hostLabel: "001122334455",
            interfaces: [
                MDNSInterface(
                    name: "eth0", ipv4: [[192, 168, 1, 20]],
                    ipv6: [[0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]],
                    networks: [
                        .init(address: [192, 168, 1, 20], prefixLength: 23),
                        .init(
                            address: [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1], prefixLength: 64
                        )
                    ])
            ])
        _ = try core.advertise(Self.commissionable, now: 0)
        func asked(from address: [UInt8], port: Int = 40_000) -> Int {
            let family: MDNSAddressFamily = address.count == 4 ? .ipv4 : .ipv6
            let source = MDNSQuerySource(interface: "eth0", family: family, port: port, address: address)
            return core.answer(query(Self.byDiscriminator, .ptr), from: source, now: 10_000).count
        }
        #expect(asked(from: [192, 168, 0, 7]) == 1)  // the /23 holds 192.168.0.0–192.168.1.255
        #expect(asked(from: [192, 168, 2, 7]) == 0)
        #expect(asked(from: [8, 8, 8, 8]) == 0)
        #expect(asked(from: [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [9]) == 1)
        #expect(asked(from: [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0xAA] + [UInt8](repeating: 0, count: 7)) == 1)
        #expect(asked(from: [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)) == 0)
        #expect(asked(from: []) == 0)
        #expect(core.statistics.offLink == 4)
    }

    @Test func theServiceTypesAreListedForDNSSDEnumeration() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let reply = core.answer(query(try DNSName("_services._dns-sd._udp.local"), .ptr), from: Self.mdns, now: 9_000)
        #expect(reply.first?.message.answers.map(\.data) == [.ptr(try DNSName("_matterc._udp.local"))])
    }

    @Test func withdrawingSaysGoodbyeWithTTLZero() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let goodbye = core.withdraw(Self.commissionable)
        #expect(goodbye.count == 2)
        #expect(goodbye.allSatisfy { $0.message.answers.allSatisfy { $0.ttl == 0 } })
        #expect(goodbye[0].message.answers.contains { $0.name == Self.byDiscriminator })
        #expect(core.nextDeadline == nil)
        #expect(core.answer(query(Self.byDiscriminator, .ptr), from: Self.mdns, now: 9_000).isEmpty)
    }

    @Test func commissioningThenSwitchesToTheOperationalService() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let operational = MatterServiceNames.operational(compressedFabricID: 0xAB, nodeID: 0x1)
        let goodbye = core.withdraw(Self.commissionable)
        _ = try core.advertise(operational, now: 100)
        // The `_services._dns-sd._udp` entry for `_matterc._udp` went with the last commissionable service.
        #expect(goodbye[0].message.answers.contains { $0.data == .ptr(try! DNSName("_matterc._udp.local")) })
        let reply = core.answer(
            query(try DNSName("_I00000000000000AB._sub._matter._tcp.local"), .ptr), from: Self.mdns, now: 9_000)
        #expect(
            reply.first?.message.answers.map(\.data) == [
                .ptr(try DNSName("00000000000000AB-0000000000000001._matter._tcp.local"))
            ])
    }

    @Test func updatingAServiceWithdrawsOnlyWhatItNoLongerHas() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        var closed = Self.commissionable
        closed.subtypes.removeAll { $0 == "_CM" }
        closed.txt[2] = "CM=0"
        let packets = try core.advertise(closed, now: 500)
        let goodbyes = packets.filter { $0.message.answers.allSatisfy { $0.ttl == 0 } }
        #expect(goodbyes.count == 2)
        #expect(
            Set(goodbyes[0].message.answers.map(\.name)) == [try DNSName("_CM._sub._matterc._udp.local"), Self.instance]
        )
        #expect(goodbyes[0].message.answers.allSatisfy { $0.type == .ptr || $0.type == .txt })
        #expect(core.nextDeadline == 1_500)
    }

    @Test func newAddressesAreAnnouncedWithTheServices() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        _ = core.due(now: 1_000)
        _ = core.due(now: 3_000)
        var moved = Self.eth0
        moved.ipv4 = [[192, 168, 1, 21]]
        let packets = core.update(moved, now: 5_000)
        #expect(packets.count == 2)
        #expect(
            packets[0].message.answers.contains(
                DNSRecord(name: core.hostName, ttl: 120, data: .a([192, 168, 1, 21]), cacheFlush: true)))
        #expect(!packets[0].message.answers.contains { $0.data == .a([192, 168, 1, 20]) })
        #expect(core.nextDeadline == 6_000)
        #expect(core.update(MDNSInterface(name: "wlan0"), now: 5_000).isEmpty)
    }

    @Test func shutdownSaysGoodbyeForEverythingIncludingTheAddresses() throws {
        var core = try responder()
        _ = try core.advertise(Self.commissionable, now: 0)
        let packets = core.shutdown()
        let records = packets.flatMap(\.message.answers)
        #expect(records.allSatisfy { $0.ttl == 0 })
        #expect(records.contains { $0.type == .a } && records.contains { $0.type == .srv })
        #expect(core.services.isEmpty && core.nextDeadline == nil)
    }

    @Test func aServiceWithBadNamesIsRefused() throws {
        var core = try responder()
        #expect(throws: DNSMessageError.self) {
            try core.advertise(DNSSDService(instance: "", type: "_matterc._udp", port: 1), now: 0)
        }
        #expect(throws: DNSMessageError.self) {
            try core.advertise(DNSSDService(instance: "x", type: "matterc", port: 1), now: 0)
        }
        #expect(throws: DNSMessageError.self) {
            try core.advertise(
                DNSSDService(instance: String(repeating: "x", count: 64), type: "_matterc._udp", port: 1), now: 0)
        }
        #expect(core.services.isEmpty)
    }
}
