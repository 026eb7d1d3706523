import HearthMatter
import Testing

/// The DNS codec against packets written out by hand from RFC 1035's layout, and its refusals.
@Suite struct DNSMessageTests {
    /// A one-question mDNS query for `_matterc._udp.local` PTR, QM, as a controller sends it.
    static let matterQuery: [UInt8] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x08, 0x5F, 0x6D, 0x61, 0x74, 0x74, 0x65, 0x72, 0x63, 0x04, 0x5F, 0x75, 0x64, 0x70, 0x05, 0x6C, 0x6F, 0x63,
        0x61,
        0x6C, 0x00, 0x00, 0x0C, 0x00, 0x01
    ]

    @Test func aKnownQueryReadsAndWritesByteForByte() throws {
        let message = try DNSMessage(decoding: Self.matterQuery)
        #expect(message.questions == [DNSQuestion(name: try DNSName("_matterc._udp.local"), type: .ptr)])
        #expect(!message.isResponse && message.answers.isEmpty)
        #expect(message.encoded() == Self.matterQuery)
    }

    @Test func theUnicastResponseAndCacheFlushBitsAreReadFromTheClass() throws {
        var bytes = Self.matterQuery
        bytes[bytes.count - 2] = 0x80  // QU
        #expect(try DNSMessage(decoding: bytes).questions[0].unicastResponse)
        #expect(try DNSMessage(decoding: bytes).questions[0].recordClass == 1)

        let record = DNSRecord(name: try DNSName("host.local"), ttl: 120, data: .a([10, 0, 0, 1]), cacheFlush: true)
        let encoded = DNSMessage(flags: DNSMessage.responseFlags, answers: [record]).encoded()
        // name (12) … type A, class 0x8001
        #expect(Array(encoded[24..<28]) == [0x00, 0x01, 0x80, 0x01])
        #expect(try DNSMessage(decoding: encoded).answers == [record])
    }

    @Test func aResponseCompressesNamesAndReadsBackTheSame() throws {
        let type = try DNSName("_matterc._udp.local")
        let instance = try DNSName(labels: ["DD200C20D25AE5F7"]).appending(type)
        let host = try DNSName("B75AFB458ECD.local")
        let message = DNSMessage(
            id: 0, flags: DNSMessage.responseFlags,
            answers: [
                DNSRecord(name: type, ttl: 4500, data: .ptr(instance)),
                DNSRecord(name: try DNSName("_L3840._sub._matterc._udp.local"), ttl: 4500, data: .ptr(instance))
            ],
            additionals: [
                DNSRecord(
                    name: instance, ttl: 120, data: .srv(priority: 0, weight: 0, port: 5540, target: host),
                    cacheFlush: true),
                DNSRecord(
                    name: instance, ttl: 4500, data: .txt([Array("D=3840".utf8), Array("CM=1".utf8), []]),
                    cacheFlush: true),
                DNSRecord(name: host, ttl: 120, data: .a([10, 231, 0, 1]), cacheFlush: true),
                DNSRecord(
                    name: host, ttl: 120, data: .aaaa([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]),
                    cacheFlush: true),
                DNSRecord(name: instance, ttl: 120, data: .nsec(next: instance, types: [.txt, .srv]), cacheFlush: true)
            ])
        let bytes = message.encoded()
        #expect(try DNSMessage(decoding: bytes) == message)
        // `_matterc._udp.local` is written once; every later use is a 2-byte pointer.
        let label = Array("_matterc".utf8)
        let occurrences = (0...(bytes.count - label.count)).filter { Array(bytes[$0..<($0 + label.count)]) == label }
            .count
        #expect(occurrences == 1 + 1)  // once in the names, once uncompressed inside NSEC (RFC 6762 §18.14)
        #expect(bytes.count < 260)
    }

    @Test func namesCompareWithoutRegardToCase() throws {
        #expect(try DNSName("_L3840._SUB._matterc._UDP.local") == DNSName("_l3840._sub._MATTERC._udp.LOCAL"))
        #expect(try DNSName("a.local") != DNSName("b.local"))
        #expect(Set([try DNSName("X.local"), try DNSName("x.local")]).count == 1)
    }

    @Test func aQueryWithKnownAnswersReadsThem() throws {
        let instance = try DNSName(labels: ["ABC"]).appending(DNSName("_matterc._udp.local"))
        let query = DNSMessage(
            questions: [DNSQuestion(name: try DNSName("_matterc._udp.local"), type: .ptr)],
            answers: [DNSRecord(name: try DNSName("_matterc._udp.local"), ttl: 4000, data: .ptr(instance))])
        #expect(try DNSMessage(decoding: query.encoded()) == query)
    }

    @Test(
        arguments: [
            ([UInt8](), "message ends at byte 0 inside the header"),
            ([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 0x61], "message ends at byte 12 inside a label"),
            // a pointer to itself
            (
                [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1],
                "malformed name at byte 12: a pointer to byte 12, not before byte 12"
            ),
            // a pointer forward
            (
                [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 14, 0, 0, 1, 0, 1],
                "malformed name at byte 12: a pointer to byte 14, not before byte 12"
            ),
            // the extended label type 01
            ([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x41, 0, 0, 1, 0, 1], "malformed name at byte 12: label type 0x40"),
            ([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0xFF], "1 bytes after the last record"),
            // an A record with 3 bytes of address
            (
                [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 120, 0, 3, 10, 0, 0],
                "malformed A record at byte 23: 3 bytes of address"
            ),
            // a PTR whose name runs past its data length into the next bytes
            (
                [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 12, 0, 1, 0, 0, 0, 120, 0, 2, 1, 0x61, 0],
                "message ends at byte 25 inside a name"
            ),
            // an answer count the message does not hold
            ([0, 0, 0x84, 0, 0, 0, 0, 9, 0, 0, 0, 0], "message ends at byte 12 inside a name")
        ] as [([UInt8], String)])
    func malformedMessagesAreRefusedWithTheReason(_ bytes: [UInt8], _ reason: String) {
        #expect(throws: DNSMessageError.self) { try DNSMessage(decoding: bytes) }
        do {
            _ = try DNSMessage(decoding: bytes)
        } catch {
            #expect(error.description == reason)
        }
    }

    @Test func aNameLongerThan255BytesIsRefused() throws {
        // Five 63-byte labels: 321 bytes.
        var bytes: [UInt8] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for _ in 0..<5 { bytes += [63] + [UInt8](repeating: 0x61, count: 63) }
        bytes += [0, 0, 1, 0, 1]
        #expect(throws: DNSMessageError.self) { try DNSMessage(decoding: bytes) }
        #expect(throws: DNSMessageError.self) {
            try DNSName(labels: [[UInt8]](repeating: [UInt8](repeating: 0x61, count: 63), count: 5))
        }
        #expect(throws: DNSMessageError.self) { try DNSName(labels: [[UInt8](repeating: 0x61, count: 64)]) }
    }

    @Test func aPointerChainBackwardsIsFollowed() throws {
        // "local" at 12, then a name "a" + pointer to 12 as the second question's name.
        let bytes: [UInt8] = [0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0,
                              5, 0x6C, 0x6F, 0x63, 0x61, 0x6C, 0, 0, 1, 0, 1,
                              1, 0x61, 0xC0, 12, 0, 1, 0, 1]
        let message = try DNSMessage(decoding: bytes)
        #expect(message.questions.map(\.name) == [try DNSName("local"), try DNSName("a.local")])
    }
}
