// A QR code drawn in terminal text, for the pairing payload a person scans from the hub's console or journal.
// libqrencode makes the symbol; this file only draws it.
import CQREncode
#if canImport(Glibc)
import Glibc
#endif

/// A QR code symbol: `width` × `width` modules, dark or light.
public struct QRCodeSymbol: Sendable, Equatable {
    public let width: Int
    /// Row-major; true is a dark module.
    public let modules: [Bool]

    /// Why libqrencode failed to make a symbol, with the errno it set.
    public struct EncodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public let errno: Int32
        public var description: String {
            "QR code encoding failed: \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }

    /// Encodes `text` (case-sensitive) at error-correction level M, the smallest version that holds it.
    public init(encoding text: String) throws(EncodingError) {
        errno = 0
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            throw EncodingError(errno: errno == 0 ? EINVAL : errno)
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        self.width = width
        modules = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
    }

    public func isDark(row: Int, column: Int) -> Bool {
        guard (0..<width).contains(row), (0..<width).contains(column) else { return false }
        return modules[row * width + column]
    }

    /// Two rows of modules a line in block characters, light drawn and dark left blank (as `qrencode -t UTF8`
    /// does: a terminal's background is usually dark), with a quiet zone of `margin` light modules.
    public func terminalText(margin: Int = 2) -> String {
        var lines: [String] = []
        var row = -margin
        while row < width + margin {
            var line = ""
            for column in -margin..<(width + margin) {
                switch (isDark(row: row, column: column), isDark(row: row + 1, column: column)) {
                case (false, false): line += "\u{2588}"  // █ both light
                case (false, true): line += "\u{2580}"  // ▀ top light
                case (true, false): line += "\u{2584}"  // ▄ bottom light
                case (true, true): line += " "
                }
            }
            lines.append(line)
            row += 2
        }
        return lines.joined(separator: "\n")
    }
}
