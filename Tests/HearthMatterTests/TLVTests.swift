import HearthMatter
import Testing

/// Bytes from hex text, spaces ignored.
func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

@Suite struct TLVTests {
    /// connectedhomeip's `Encoding1` (src/lib/core/tests/TestTLV.cpp), a structure using every tag form.
    static let encoding1 = hexBytes("""
        D5 BB AA DD CC 01 00 C9 BB AA DD CC 02 00 88 02 00 36 00 00 2A 00 EF 02 F0 67 FD FF 07 00 90 2F
        50 09 00 00 00 15 18 17 D4 BB AA DD CC 11 00 B4 A0 BB 0D 00 14 B5 00 28 6B EE 6D 70 11 01 00 0E
        01 53 54 41 52 54 2E 2E 2E 21 31 32 33 34 35 36 37 38 39 41 42 43 44 45 46 40 31 32 33 34 35 36
        37 38 39 41 42 43 44 45 46 23 31 32 33 34 35 36 37 38 39 41 42 43 44 45 46 24 31 32 33 34 35 36
        37 38 39 41 42 43 44 45 46 25 31 32 33 34 35 36 37 38 39 41 42 43 44 45 46 5E 31 32 33 34 35 36
        37 38 39 41 42 43 44 45 46 26 31 32 33 34 35 36 37 38 39 41 42 43 44 45 46 2A 31 32 33 34 35 36
        37 38 39 41 42 43 44 45 46 30 31 32 33 34 35 36 37 28 39 41 42 43 44 45 46 30 31 32 33 34 35 36
        37 29 39 41 42 43 44 45 46 30 31 32 33 34 35 36 37 2D 39 41 42 43 44 45 46 30 31 32 33 34 35 36
        37 3D 39 41 42 43 44 45 46 30 31 32 33 34 35 36 37 5B 39 41 42 43 44 45 46 30 31 32 33 34 35 36
        37 5D 39 41 42 43 44 45 46 30 31 32 33 34 35 36 37 3B 39 41 42 43 44 45 46 30 31 32 33 34 35 36
        37 27 39 41 42 43 44 45 46 2E 2E 2E 45 4E 44 18 18 18 CC BB AA DD CC 05 00 0E 54 68 69 73 20 69
        73 20 61 20 74 65 73 74 8A FF FF 33 33 8F 41 AB 00 00 01 00 66 66 66 66 66 E6 31 40 18
        """)

    static let largeString: String = {
        var text = "START..."
        text += "!123456789ABCDEF@123456789ABCDEF#123456789ABCDEF$123456789ABCDEF"
        text += "%123456789ABCDEF^123456789ABCDEF&123456789ABCDEF*123456789ABCDEF"
        text += "01234567(9ABCDEF01234567)9ABCDEF01234567-9ABCDEF01234567=9ABCDEF"
        text += "01234567[9ABCDEF01234567]9ABCDEF01234567;9ABCDEF01234567'9ABCDEF"
        text += "...END"
        return text
    }()

    static func profile1(_ tag: UInt32) -> TLVTag { .fullyQualified(vendor: 0xAABB, profile: 0xCCDD, tag: tag) }

    static let encoding1Element = TLVElement.structure(tag: profile1(1)) {
        TLVElement(tag: profile1(2), .bool(true))
        TLVElement(tag: .implicitProfile(2), .bool(false))
        TLVElement.array(tag: .context(0)) {
            TLVElement(.signed(42))
            TLVElement(.signed(-17))
            TLVElement(.signed(-170_000))
            TLVElement(.unsigned(40_000_000_000))
            TLVElement.structure {}
            TLVElement.list {
                TLVElement(tag: profile1(17), .null)
                TLVElement(tag: .implicitProfile(900_000), .null)
                TLVElement(.null)
                TLVElement.structure(tag: .implicitProfile(4_000_000_000)) {
                    TLVElement(tag: .commonProfile(70_000), .utf8(largeString))
                }
            }
        }
        TLVElement(tag: profile1(5), .utf8("This is a test"))
        TLVElement(tag: .implicitProfile(65535), .float(17.9))
        TLVElement(tag: .implicitProfile(65536), .double(17.9))
    }

    @Test func connectedhomeipEncoding1DecodesAndEncodesBack() throws {
        let element = try TLVElement(decoding: Self.encoding1)
        #expect(element == Self.encoding1Element)
        #expect(element.encoded() == Self.encoding1)
    }

    /// Single elements, from the specification's examples of each type and tag form.
    @Test(arguments: [
        ("08", TLVElement(.bool(false))),
        ("09", TLVElement(.bool(true))),
        ("00 2a", TLVElement(.signed(42))),
        ("00 ef", TLVElement(.signed(-17))),
        ("04 2a", TLVElement(.unsigned(42))),
        ("02 f0 67 fd ff", TLVElement(.signed(-170_000))),
        ("03 00 90 2f 50 09 00 00 00", TLVElement(.signed(40_000_000_000))),
        ("0c 06 48 65 6c 6c 6f 21", TLVElement(.utf8("Hello!"))),
        ("0c 07 54 73 63 68 c3 bc 73", TLVElement(.utf8("Tschüs"))),
        ("10 05 00 01 02 03 04", TLVElement(.bytes([0, 1, 2, 3, 4]))),
        ("14", TLVElement(.null)),
        ("0a 00 00 00 00", TLVElement(.float(0))),
        ("0a 33 33 8f 41", TLVElement(.float(17.9))),
        ("0a 00 00 80 7f", TLVElement(.float(.infinity))),
        ("0a 00 00 80 ff", TLVElement(.float(-.infinity))),
        ("0b 55 55 55 55 55 55 d5 3f", TLVElement(.double(1.0 / 3))),
        ("0b 00 00 00 00 00 00 f0 7f", TLVElement(.double(.infinity))),
        ("15 18", TLVElement(.structure([]))),
        ("16 18", TLVElement(.array([]))),
        ("17 18", TLVElement(.list([]))),
        (
            "15 20 00 2a 20 01 ef 18",
            TLVElement(.structure([TLVElement(context: 0, .signed(42)), TLVElement(context: 1, .signed(-17))]))
        ),
        ("16 00 00 00 01 00 02 00 03 00 04 18", TLVElement(.array((0...4).map { TLVElement(.signed($0)) }))),
        (
            "17 00 01 20 00 2a 00 02 00 03 20 00 ef 18",
            TLVElement(
                .list([
                    TLVElement(.signed(1)), TLVElement(context: 0, .signed(42)), TLVElement(.signed(2)),
                    TLVElement(.signed(3)),
                    TLVElement(context: 0, .signed(-17))
                ]))
        ),
        ("24 01 2a", TLVElement(context: 1, .unsigned(42))),
        ("44 01 00 2a", TLVElement(tag: .commonProfile(1), .unsigned(42))),
        ("64 a0 86 01 00 2a", TLVElement(tag: .commonProfile(100_000), .unsigned(42))),
        ("84 01 00 2a", TLVElement(tag: .implicitProfile(1), .unsigned(42))),
        ("a4 ed fe 55 aa 2a", TLVElement(tag: .implicitProfile(0xAA55_FEED), .unsigned(42))),
        (
            "c4 f1 ff ed de 01 00 2a",
            TLVElement(tag: .fullyQualified(vendor: 0xFFF1, profile: 0xDEED, tag: 1), .unsigned(42))
        ),
        (
            "e4 f1 ff ed de ed fe 55 aa 2a",
            TLVElement(tag: .fullyQualified(vendor: 0xFFF1, profile: 0xDEED, tag: 0xAA55_FEED), .unsigned(42))
        )
    ])
    func vector(_ hex: String, _ element: TLVElement) throws {
        #expect(try TLVElement(decoding: hexBytes(hex)) == element)
        #expect(element.encoded() == hexBytes(hex))
    }

    @Test func integersTakeTheSmallestWidth() throws {
        let signed: [(Int64, Int)] = [
            (0, 2), (127, 2), (-128, 2), (128, 3), (-129, 3), (32767, 3), (-32768, 3), (32768, 5), (-32769, 5),
            (Int64(Int32.max), 5), (Int64(Int32.min), 5), (Int64(Int32.max) + 1, 9), (.min, 9), (.max, 9),
        ]
        for (v, size) in signed {
            let bytes = TLVElement(.signed(v)).encoded()
            #expect(bytes.count == size, "\(v)")
            #expect(try TLVElement(decoding: bytes).signedValue == v)
        }
        let unsigned: [(UInt64, Int)] = [(0, 2), (255, 2), (256, 3), (65535, 3), (65536, 5), (UInt64(UInt32.max), 5),
                                         (UInt64(UInt32.max) + 1, 9), (.max, 9)]
        for (v, size) in unsigned {
            let bytes = TLVElement(.unsigned(v)).encoded()
            #expect(bytes.count == size, "\(v)")
            #expect(try TLVElement(decoding: bytes).unsignedValue == v)
        }
    }

    @Test func wideEncodingsAreReadToo() throws {
        #expect(try TLVElement(decoding: hexBytes("01 2a 00")).signedValue == 42)
        #expect(try TLVElement(decoding: hexBytes("07 2a 00 00 00 00 00 00 00")).unsignedValue == 42)
        #expect(try TLVElement(decoding: hexBytes("01 ff ff")).signedValue == -1)
        #expect(try TLVElement(decoding: hexBytes("0d 02 00 68 69")).stringValue == "hi")
        #expect(try TLVElement(decoding: hexBytes("13 01 00 00 00 00 00 00 00 07")).bytesValue == [7])
    }

    @Test func longStringsTakeWiderLengths() throws {
        for count in [0, 255, 256, 65535, 65536] {
            let element = TLVElement(.bytes(Array(repeating: 0xA5, count: count)))
            let bytes = element.encoded()
            let lengthWidth = count <= 255 ? 1 : count <= 65535 ? 2 : 4
            #expect(bytes.count == 1 + lengthWidth + count)
            #expect(try TLVElement(decoding: bytes) == element)
        }
    }

    @Test func nanIsEqualToItselfAndKeepsItsBits() throws {
        let element = TLVElement(.double(.nan))
        #expect(try TLVElement(decoding: element.encoded()) == element)
    }

    @Test(arguments: [
        // Truncations: in a control byte, a tag, a value, a length, a string's content.
        ("", TLVError(.truncated(needed: 1), at: 0)),
        ("24", TLVError(.truncated(needed: 1), at: 1)),
        ("24 01", TLVError(.truncated(needed: 1), at: 2)),
        ("c4 f1 ff ed", TLVError(.truncated(needed: 3), at: 1)),
        ("03 00 01", TLVError(.truncated(needed: 6), at: 1)),
        ("0d 05", TLVError(.truncated(needed: 1), at: 1)),
        ("0c 05 68 69", TLVError(.truncated(needed: 3), at: 2)),
        // A length field too large for memory.
        ("13 ff ff ff ff ff ff ff ff", TLVError(.lengthOverflow(.max), at: 1)),
        ("0c 02 c3 28", TLVError(.invalidUTF8, at: 2)),
        ("0c 01 ff", TLVError(.invalidUTF8, at: 2)),
        ("19", TLVError(.reservedElementType(0x19), at: 0)),
        ("15 3f 01 18", TLVError(.reservedElementType(0x1F), at: 1)),
        ("18", TLVError(.unexpectedEndOfContainer, at: 0)),
        ("15 38 18", TLVError(.taggedEndOfContainer(0x38), at: 1)),
        ("38 01", TLVError(.taggedEndOfContainer(0x38), at: 0)),
        ("15", TLVError(.missingEndOfContainer, at: 1)),
        ("16 00 01", TLVError(.missingEndOfContainer, at: 3)),
        ("15 18 18", TLVError(.trailingBytes(count: 1), at: 2)),
        ("08 08", TLVError(.trailingBytes(count: 1), at: 1)),
        ("15 04 01 18", TLVError(.anonymousStructureMember, at: 1)),
        ("15 24 01 05 24 01 06 18", TLVError(.duplicateStructureMember(.context(1)), at: 4)),
        ("16 24 01 05 18", TLVError(.taggedArrayMember(.context(1)), at: 1)),
    ])
    func malformedInputIsRefusedPrecisely(_ hex: String, _ error: TLVError) {
        #expect(throws: error) { try TLVElement(decoding: hexBytes(hex)) }
    }

    @Test func nestingIsLimited() throws {
        let deep = { (n: Int) in Array(repeating: UInt8(0x16), count: n) + Array(repeating: UInt8(0x18), count: n) }
        #expect(try TLVElement(decoding: deep(TLVElement.maximumDepth)).arrayMembers != nil)
        #expect(throws: TLVError(.nestingTooDeep(limit: TLVElement.maximumDepth), at: TLVElement.maximumDepth)) {
            try TLVElement(decoding: deep(TLVElement.maximumDepth + 1))
        }
        #expect(throws: TLVError(.nestingTooDeep(limit: 32), at: 32)) {
            try TLVElement(decoding: Array(repeating: UInt8(0x17), count: 100_000))
        }
    }

    @Test func decodePrefixSaysHowMuchItRead() throws {
        let (element, length) = try TLVElement.decodePrefix(of: hexBytes("24 01 2a ff ff"))
        #expect(element == TLVElement(context: 1, .unsigned(42)))
        #expect(length == 3)
    }

    @Test func typedAccessorsAndFieldErrors() throws {
        let flag: Bool? = true
        let element = TLVElement.structure {
            TLVElement(context: 1, .uint(UInt16(5)))
            TLVElement(context: 2, .bytes([1, 2, 3]))
            if let flag { TLVElement(context: 3, .bool(flag)) }
            for i in 0..<2 { TLVElement(context: 10 + UInt8(i), .int(Int8(-1))) }
            TLVElement.array(tag: .context(4)) { TLVElement(.utf8("a")) }
        }
        #expect(element[context: 1]?.unsignedValue == 5)
        #expect(try element.field(1).unsigned(UInt8.self) == 5)
        #expect(try element.field(2).bytes(count: 3) == [1, 2, 3])
        #expect(try element.field(3).bool())
        #expect(try element.field(11).signed(Int8.self) == -1)
        #expect(try element.field(4).array().first?.string() == "a")
        #expect(element.optionalField(9) == nil)
        #expect(throws: TLVFieldError(.missing, tag: .context(9))) { try element.field(9) }
        #expect(throws: TLVFieldError(.wrongType(expected: "boolean", found: "unsigned integer"), tag: .context(1))) {
            try element.field(1).bool()
        }
        #expect(throws: TLVFieldError(.outOfRange("3 bytes, expected 4"), tag: .context(2))) {
            try element.field(2).bytes(count: 4)
        }
        let big = TLVElement(context: 7, .unsigned(300))
        #expect(throws: TLVFieldError(.outOfRange("300 does not fit UInt8"), tag: .context(7))) {
            try big.unsigned(UInt8.self)
        }
        #expect(try TLVElement(decoding: element.encoded()) == element)
    }

    /// Any bytes: a typed error or an element that encodes to bytes that decode to the same element.
    @Test func arbitraryBytesNeverCrashAndRoundTrip() {
        var generator = SplitMix64(seed: 37)
        var decoded = 0
        for _ in 0..<20_000 {
            let count = Int(generator.next() % 24)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            // Bias toward valid control bytes and short lengths so that many inputs decode.
            for i in bytes.indices where generator.next() % 3 == 0 { bytes[i] &= 0x3F }
            guard let element = try? TLVElement(decoding: bytes) else { continue }
            decoded += 1
            #expect((try? TLVElement(decoding: element.encoded())) == element, "\(bytes)")
        }
        #expect(decoded > 100)
    }
}

/// A small deterministic generator for tests (splitmix64).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
