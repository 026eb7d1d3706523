import HearthMatter
import Testing

/// Vectors from connectedhomeip's src/setup_payload/tests (TestQRCode.cpp, TestManualCode.cpp, TestHelpers.h).
@Suite struct SetupPayloadTests {
    @Test func base38Vectors() throws {
        let vectors: [([UInt8], String)] = [
            ([], ""), ([10], "A0"), ([10, 10], "OT10"), ([10, 10, 10], "-N.B0"), ([10, 10, 0], "OT100"),
            ([10, 10, 40], "Y6V91"), ([10, 10, 41], "KL0B1"), ([10, 10, 255], "Q-M08"), ([35], "Z0"),
            ([255, 0], "R600"),
            ([46, 0, 0], "81000"), ([255], "R6"), ([255, 255], "NE71"), ([255, 255, 255], "PLS18"),
            (Array("Hello World!".utf8), "KKHF3W2S013OPM3EJX11"), ([0, 1], "S600"), ([0, 0, 1], "OE710")
        ]
        for (bytes, text) in vectors {
            #expect(Base38.encode(bytes) == text)
            #expect(try Base38.decode(Array(text.utf8)) == bytes)
        }
        for bad in ["0\u{1}", "[0", "0[", " 0", "!0", "@0", "a0"] {
            #expect(throws: SetupPayloadError.self) { try Base38.decode(Array(bad.utf8)) }
        }
        #expect(throws: SetupPayloadError.invalidBase38Chunk(offset: 0)) { try Base38.decode(Array("S6".utf8)) }
        #expect(throws: SetupPayloadError.invalidBase38Chunk(offset: 0)) { try Base38.decode(Array("OE71".utf8)) }
        #expect(throws: SetupPayloadError.invalidBase38Chunk(offset: 0)) { try Base38.decode(Array("QLS18".utf8)) }
        #expect(throws: SetupPayloadError.invalidBase38Chunk(offset: 5)) { try Base38.decode(Array("000001".utf8)) }
    }

    static let defaultPayload = SetupPayload(vendorID: 12, productID: 1, commissioningFlow: .standard,
                                             discoveryCapabilities: .softAP, discriminator: 128, passcode: 2048)

    @Test func qrCodeVector() throws {
        #expect(Self.defaultPayload.qrCode == "MT:M5L90MP500K64J00000")
        #expect(try SetupPayload(qrCode: "MT:M5L90MP500K64J00000") == Self.defaultPayload)
    }

    @Test func qrCodeRoundTripsAtTheLimits() throws {
        let payload = SetupPayload(vendorID: 0xFFFF, productID: 0xFFFF, commissioningFlow: .custom,
                                   discoveryCapabilities: [.softAP, .ble, .onNetwork, .wifiPAF, .nfc],
                                   discriminator: 0xFFF, passcode: 99_999_998)
        #expect(try SetupPayload(qrCode: payload.qrCode) == payload)
        #expect(throws: SetupPayloadError.missingPrefix) { try SetupPayload(qrCode: "M5L90MP500K64J00000") }
        #expect(throws: SetupPayloadError.payloadTooShort) { try SetupPayload(qrCode: "MT:M5L90") }
        #expect(throws: SetupPayloadError.invalidBase38Character(offset: 2)) {
            try SetupPayload(qrCode: "MT:M5l90MP500K64J00000")
        }
    }

    /// Digits without their check digit, as connectedhomeip's tests write them.
    static func withCheckDigit(_ digits: String) -> String {
        digits + String(Verhoeff.checkDigit(Array(digits.utf8).map { $0 &- 48 }))
    }

    @Test func manualCodeVectors() throws {
        let short = SetupPayload(vendorID: 0, productID: 0, discriminator: 2560, passcode: 123_456_780)
        #expect(short.manualPairingCode == Self.withCheckDigit("2361087535"))
        let long = SetupPayload(vendorID: 45367, productID: 14526, commissioningFlow: .custom, discriminator: 2560,
                                passcode: 123_456_780)
        #expect(long.manualPairingCode == Self.withCheckDigit("63610875354536714526"))
        let ones = SetupPayload(vendorID: 65535, productID: 65535, commissioningFlow: .custom, discriminator: 0xFFF,
                                passcode: 0x7FF_FFFF)
        #expect(ones.manualPairingCode == Self.withCheckDigit("76553581916553565535"))

        let parsed = try SetupPayload(manualPairingCode: Self.withCheckDigit("52927623630456200032"))
        #expect(
            parsed.passcode == 38_728_284 && parsed.discriminator == 1280 && parsed.vendorID == 4562
                && parsed.productID == 32)
        let small = try SetupPayload(manualPairingCode: Self.withCheckDigit("0000010000"))
        #expect(small.passcode == 1 && small.discriminator == 0)
        // The discriminator read is the short one: 0xa1f comes back as 0xa00.
        let longDiscriminator = SetupPayload(vendorID: 0, productID: 0, discriminator: 0xA1F, passcode: 123_456_780)
        #expect(try SetupPayload(manualPairingCode: longDiscriminator.manualPairingCode).discriminator == 0xA00)
    }

    @Test func theWellKnownDevelopmentCode() throws {
        // connectedhomeip's example apps: discriminator 3840, passcode 20202021.
        let payload = SetupPayload(vendorID: 0xFFF1, productID: 0x8000, discriminator: 3840, passcode: 20_202_021)
        #expect(payload.manualPairingCode == "34970112332")
    }

    @Test func badManualCodesAreRefused() {
        #expect(throws: SetupPayloadError.invalidLength(1)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit(""))
        }
        #expect(throws: SetupPayloadError.invalidDigit(offset: 5)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("24184.2196"))
        }
        #expect(throws: SetupPayloadError.invalidLength(5)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("2456"))
        }
        #expect(throws: SetupPayloadError.invalidLength(22)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("123456789123456785671"))
        }
        #expect(throws: SetupPayloadError.invalidLength(12)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("12749875380"))
        }
        #expect(throws: SetupPayloadError.invalidLength(21)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("23456789123456785610"))
        }
        #expect(throws: SetupPayloadError.invalidPasscode(0)) {
            try SetupPayload(manualPairingCode: Self.withCheckDigit("2327680000"))
        }
        #expect(throws: SetupPayloadError.checkDigitMismatch) { try SetupPayload(manualPairingCode: "02684354589") }
    }

    @Test func passcodeValidity() {
        #expect(SetupPasscode.isValid(1))
        #expect(SetupPasscode.isValid(20_202_021))
        #expect(SetupPasscode.isValid(99_999_998))
        for bad: UInt32 in [0, 11_111_111, 22_222_222, 99_999_999, 12_345_678, 87_654_321, 100_000_000] {
            #expect(!SetupPasscode.isValid(bad), "\(bad)")
        }
    }

    @Test func randomPasscodesAndDiscriminatorsAreValid() {
        var generator = SplitMix64(seed: 5)
        let source: (Int) -> [UInt8] = { n in (0..<n).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        for _ in 0..<1000 {
            #expect(SetupPasscode.isValid(SetupPasscode.random(from: source)))
            #expect(SetupDiscriminator.random(from: source) <= 0xFFF)
        }
        // A source that gives only forbidden values at first is asked again.
        var answers: [[UInt8]] = [[0, 0, 0, 0], [0x00, 0xA9, 0x8A, 0xC7], [0, 0, 0, 7]]
        #expect(SetupPasscode.random(from: { _ in answers.removeFirst() }) == 7)
    }
}

@Test func systemRandomPasscodesAreValid() throws {
    for _ in 0..<20 {
        #expect(SetupPasscode.isValid(try SetupPasscode.random()))
        #expect(try SetupDiscriminator.random() <= 0xFFF)
    }
}
