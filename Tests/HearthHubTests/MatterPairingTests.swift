#if canImport(Glibc)
import Glibc
#endif
import HearthMatter
@testable import HearthHub
import Testing

/// The hub's Matter pairing values: made once, kept where only the hub may read them, overridden by the configuration.
@Suite struct MatterPairingTests {
    func temporaryStateDirectory() throws -> String {
        var template = Array("/tmp/hearth-matter-pairing-XXXXXX".utf8CString)
        let made = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
        return String(cString: made)
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func madeAtTheFirstStartKeptPrivateAndTheSameAfterwards() throws {
        let state = try temporaryStateDirectory()
        let first = try MatterHub.pairing(MatterSettings(), stateDirectory: state)
        #expect(SetupPasscode.isValid(first.passcode))
        #expect(first.discriminator <= SetupDiscriminator.maximum)
        #expect(mode(state + "/matter") == 0o700)
        #expect(mode(state + "/matter/pairing") == 0o600)
        #expect(try MatterHub.pairing(MatterSettings(), stateDirectory: state) == first)
    }

    @Test func theConfigurationsValuesWinAndTheCodesCarryThem() throws {
        let state = try temporaryStateDirectory()
        var settings = MatterSettings()
        settings.passcode = 20_202_021
        settings.discriminator = 3840
        let pairing = try MatterHub.pairing(settings, stateDirectory: state)
        #expect(pairing == MatterPairing(passcode: 20_202_021, discriminator: 3840))
        // connectedhomeip's documented codes for passcode 20202021, discriminator 3840, vendor 0xFFF1, product 0x8000.
        #expect(pairing.manualCode == "3497-011-2332")
        #expect(pairing.qrPayload == "MT:Y.K90AFN00KA0648G00")
        let printed = pairing.printable()
        #expect(printed.contains("3497-011-2332") && printed.contains("MT:Y.K90AFN00KA0648G00"))
    }

    @Test func aDamagedFileIsAnErrorNotNewCodes() throws {
        let state = try temporaryStateDirectory()
        _ = try MatterHub.pairing(MatterSettings(), stateDirectory: state)
        try MatterHub.writePrivateFile(state + "/matter/pairing", "passcode 12345678\ndiscriminator 9999\n")
        #expect(throws: MatterHub.StateError.self) { try MatterHub.pairing(MatterSettings(), stateDirectory: state) }
    }
}
