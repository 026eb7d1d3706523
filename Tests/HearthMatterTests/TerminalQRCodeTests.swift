import Foundation
import HearthMatter
import Testing

@Suite struct TerminalQRCodeTests {
    /// The QR payload of connectedhomeip's examples (passcode 20202021, discriminator 3840).
    static let payload = "MT:-24J042C00KA0648G00"

    @Test func theSymbolHasItsFinderPatterns() throws {
        let symbol = try QRCodeSymbol(encoding: Self.payload)
        #expect(symbol.width == 25)  // version 2 holds 22 alphanumeric characters at level M
        for (row, column) in [(0, 0), (0, symbol.width - 7), (symbol.width - 7, 0)] {
            // A finder pattern: a dark 7×7 ring, a light ring inside it, a dark 3×3 centre.
            #expect(symbol.isDark(row: row, column: column + 3))
            #expect(!symbol.isDark(row: row + 1, column: column + 3))
            #expect(symbol.isDark(row: row + 3, column: column + 3))
        }
    }

    /// The `qrencode` command (the same library's own drawing) as the oracle, where it is installed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/qrencode")))
    func theTextIsWhatQrencodeDraws() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/qrencode")
        process.arguments = ["-t", "UTF8", "-m", "2", "-l", "M", Self.payload]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let expected = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .newlines)
        #expect(try QRCodeSymbol(encoding: Self.payload).terminalText() == expected)
    }

    @Test func textTooLongForAnySymbolIsAnError() {
        #expect(throws: QRCodeSymbol.EncodingError.self) {
            try QRCodeSymbol(encoding: String(repeating: "x", count: 8000))
        }
    }
}
