import HearthModel
import Testing

@Suite struct ValueTypeTests {
    func error(_ body: () throws -> Void) -> HomeError? {
        do { try body(); return nil } catch { return error as? HomeError }
    }

    @Test func integersAreCheckedAgainstTheirTypeAndConstraint() {
        #expect(error { try ValueType.uint8.check(.int(255), nullable: false, what: "x") } == nil)
        #expect(error { try ValueType.uint8.check(.int(256), nullable: false, what: "x") }?.status == .constraintError)
        #expect(error { try ValueType.uint8.check(.int(-1), nullable: false, what: "x") }?.status == .constraintError)
        #expect(error { try ValueType.uint8.check(.int(255), nullable: false, constraint: 0...254, what: "level") }?
            .message == "level 255 is out of range; allowed: 0…254")
        #expect(error { try ValueType.int16.check(.int(-32768), nullable: false, what: "x") } == nil)
        #expect(error { try ValueType.uint16.check(.int(65536), nullable: false, what: "x") }?.code == .invalidArgument)
    }

    @Test func wrongKindsAreInvalidDataType() {
        let e = error { try ValueType.uint8.check(.string("7"), nullable: false, what: "level") }
        #expect(e?.status == .invalidDataType)
        #expect(e?.code == .invalidArgument)
        #expect(e?.message == "level must be uint8, not \"7\"")
        #expect(error { try ValueType.bool.check(.int(1), nullable: false, what: "x") }?.status == .invalidDataType)
    }

    @Test func nullOnlyWhereNullable() {
        #expect(error { try ValueType.uint8.check(.null, nullable: true, what: "x") } == nil)
        #expect(error { try ValueType.uint8.check(.null, nullable: false, what: "x") }?.message == "x cannot be null")
    }

    @Test func enumsAcceptOnlyDefinedValues() {
        let e = EnumType("E", [(0, "off"), (1, "on")])
        #expect(error { try ValueType.enumeration(e).check(.int(1), nullable: false, what: "x") } == nil)
        let bad = error { try ValueType.enumeration(e).check(.int(2), nullable: false, what: "x") }
        #expect(bad?.status == .constraintError)
        #expect(bad?.message == "x 2 is not a E value; allowed: 0 (off), 1 (on)")
        #expect(e.name(of: 1) == "on")
        #expect(e.value(named: "off") == 0)
    }

    @Test func bitmapsRejectReservedBits() {
        let b = BitmapType("B", [(0, "a"), (2, "c")])
        #expect(b.mask == 0b101)
        #expect(error { try ValueType.bitmap(b).check(.int(0b101), nullable: false, what: "x") } == nil)
        #expect(
            error { try ValueType.bitmap(b).check(.int(0b010), nullable: false, what: "x") }?.status == .constraintError
        )
    }

    @Test func stringsAreLimitedInBytes() {
        #expect(error { try ValueType.string(maxLength: 4).check(.string("äö"), nullable: false, what: "x") } == nil)
        #expect(error { try ValueType.string(maxLength: 4).check(.string("äöü"), nullable: false, what: "x") }?
            .status == .constraintError)
    }
}

@Suite struct CommandValidationTests {
    let command = CommandDescriptor(id: 0, name: "moveToLevel", fields: [
        FieldDescriptor("level", .uint8, constraint: 0...254),
        FieldDescriptor("transitionTime", .uint16, nullable: true, default: .int(0)),
    ])

    func error(_ args: [String: Value]) -> HomeError? {
        do { _ = try command.validate(args); return nil } catch { return error }  // typed: HomeError
    }

    @Test func defaultsAreFilledIn() throws {
        let a = try command.validate(["level": .int(10)])
        #expect(a["level"] == .int(10))
        #expect(a["transitionTime"] == .int(0))
        #expect(try command.validate(["level": .int(1), "transitionTime": .null])["transitionTime"] == .null)
    }

    @Test func unknownFieldIsInvalidCommandAndNamesTheFields() {
        let e = error(["level": .int(1), "speed": .int(3)])
        #expect(e?.status == .invalidCommand)
        #expect(e?.message == "moveToLevel has no field 'speed'; its fields are level, transitionTime")
    }

    @Test func missingFieldIsInvalidCommand() {
        #expect(error([:])?.status == .invalidCommand)
        #expect(error([:])?.message == "moveToLevel needs the field 'level' (uint8)")
    }

    @Test func outOfRangeIsConstraintError() {
        #expect(error(["level": .int(255)])?.status == .constraintError)
        #expect(error(["level": .bool(true)])?.status == .invalidDataType)
    }
}

@Suite struct HomeErrorTests {
    @Test func everyStatusMapsToTheDocumentedCode() {
        let expected: [HomeError.Status: HomeError.Code] = [
            .invalidCommand: .invalidArgument, .constraintError: .invalidArgument, .invalidDataType: .invalidArgument,
            .unsupportedCommand: .unimplemented, .unsupportedAttribute: .unimplemented,
            .unsupportedCluster: .unimplemented,
            .unsupportedWrite: .failedPrecondition, .invalidInState: .failedPrecondition, .notFound: .notFound,
            .unsupportedEndpoint: .notFound, .timeout: .deadlineExceeded, .busy: .resourceExhausted,
            .resourceExhausted: .resourceExhausted, .failure: .internal, .unsupportedAccess: .permissionDenied,
            .success: .unknown,
        ]
        for status in HomeError.Status.allCases {
            #expect(status.canonicalCode == expected[status], "\(status)")
        }
        #expect(HomeError.unavailable("x").code == .unavailable)
        #expect(HomeError.unavailable("x").status == .failure)
        #expect(HomeError.hardware("x").code == .internal)
    }

    @Test func statusBytesMatchTheInteractionModel() {
        #expect(HomeError.Status.unsupportedCommand.rawStatus == 0x81)
        #expect(HomeError.Status.constraintError.rawStatus == 0x87)
        #expect(HomeError.Status.unsupportedWrite.rawStatus == 0x88)
        #expect(HomeError.Status.unsupportedCluster.rawStatus == 0xC3)
        #expect(HomeError.Status.invalidInState.rawStatus == 0xCB)
    }
}

@Suite struct TraitIDTests {
    @Test func matterTraitsUseTheirShortName() {
        #expect(TraitID.onOff.qualifiedName == "onOff")
        #expect(TraitID(qualifiedName: "onOff") == .onOff)
        #expect(TraitID(qualifiedName: "matter.onOff") == .onOff)
    }

    @Test func manufacturerTraitsNeverCollideWithStandardOnes() {
        let spinner = TraitID(qualifiedName: "com.example.spinner")
        #expect(spinner.namespace == "com.example")
        #expect(spinner.name == "spinner")
        #expect(spinner.qualifiedName == "com.example.spinner")
        #expect(TraitID(qualifiedName: "com.example.onOff") != .onOff)
    }
}
