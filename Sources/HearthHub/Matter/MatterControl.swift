// The words of the hub's Matter control socket (`<stateDirectory>/matter/control`): `hearthd matter …` sends one
// request line and reads the answer's lines until the hub closes the connection.
//
//     fabrics                 → ok, then `fabric <index> <fabric id> <vendor> <node id> <root fingerprint> <label>`
//     open-window <seconds>   → ok, then `window <passcode> <discriminator> <seconds>`
//     remove <index>          → ok
//     reset                   → ok
//     anything else           → error <why>
//
// Numbers are decimal, ids hex, the label hex-encoded UTF-8 (`-` when empty) so that no label can break a line. The
// request reader takes outside bytes (whoever can open the socket) and is a fuzz target: it accepts exactly the
// forms above, each spelt one way (single spaces, decimal without leading zeros), and says precisely what is wrong
// with anything else.

public import HearthMatter

/// A request to the running hub's Matter node.
public enum MatterControlRequest: Sendable, Equatable {
    case fabrics
    case openWindow(timeoutSeconds: Int)
    case remove(FabricIndex)
    case reset

    /// The longest request line, newline included.
    public static let maximumLength = 64

    /// The request's line, newline included.
    public var line: String {
        switch self {
        case .fabrics: "fabrics\n"
        case .openWindow(let seconds): "open-window \(seconds)\n"
        case .remove(let index): "remove \(index)\n"
        case .reset: "reset\n"
        }
    }

    /// Reads one request line (the newline is required: a request cut short is not run).
    public init(parsing bytes: [UInt8]) throws(MatterControlError) {
        guard bytes.count <= Self.maximumLength else {
            throw MatterControlError("a request is at most \(Self.maximumLength) bytes, this one \(bytes.count)")
        }
        guard bytes.last == UInt8(ascii: "\n") else { throw MatterControlError("a request ends with a newline") }
        let body = bytes.dropLast()
        if let bad = body.first(where: { $0 < 0x20 || $0 > 0x7E }) {
            throw MatterControlError("a request is printable ASCII; byte 0x\(String(bad, radix: 16)) is not")
        }
        let words = body.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        func number(_ word: String, _ what: String, _ range: ClosedRange<Int>) throws(MatterControlError) -> Int {
            // Decimal digits without a leading zero: one spelling per request.
            guard !word.isEmpty, word.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), word.utf8.count <= 6,
                  word == "0" || !word.hasPrefix("0"),
                  let value = Int(word), range.contains(value) else {
                throw MatterControlError(
                    "\(what) is a number from \(range.lowerBound) to \(range.upperBound), not \"\(word)\"")
            }
            return value
        }
        switch (words.first ?? "", words.count) {
        case ("fabrics", 1): self = .fabrics
        case ("reset", 1): self = .reset
        case ("open-window", 2):
            self = .openWindow(timeoutSeconds: try number(words[1], "the timeout (seconds)", 0...65535))
        case ("remove", 2): self = .remove(FabricIndex(try number(words[1], "a fabric index", 1...254)))
        case ("fabrics", _), ("reset", _): throw MatterControlError("\"\(words[0])\" takes no argument")
        case ("open-window", _): throw MatterControlError("\"open-window\" takes one argument, the timeout in seconds")
        case ("remove", _): throw MatterControlError("\"remove\" takes one argument, the fabric index")
        default:
            throw MatterControlError("unknown request \"\(words.first ?? "")\": fabrics, open-window, remove or reset")
        }
    }
}

/// A malformed request or answer.
public struct MatterControlError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A fabric as the hub lists it.
public struct MatterFabricSummary: Sendable, Equatable {
    public var index: FabricIndex
    public var fabricID: UInt64
    public var vendorID: UInt16
    public var nodeID: UInt64
    /// The first 8 bytes of the SHA-256 of the fabric's root public key, in hex: which root CA it trusts.
    public var rootFingerprint: String
    public var label: String

    public init(
        index: FabricIndex, fabricID: UInt64, vendorID: UInt16, nodeID: UInt64, rootFingerprint: String, label: String
    ) {
        self.index = index
        self.fabricID = fabricID
        self.vendorID = vendorID
        self.nodeID = nodeID
        self.rootFingerprint = rootFingerprint
        self.label = label
    }
}

/// The answer to a request.
public enum MatterControlResponse: Sendable, Equatable {
    case fabrics([MatterFabricSummary])
    case window(MatterPairing, timeoutSeconds: Int)
    case done
    case error(String)

    /// The answer's lines.
    public var text: String {
        switch self {
        case .fabrics(let fabrics):
            "ok\n"
                + fabrics.map { f in
                    "fabric \(f.index) \(hex(f.fabricID)) \(hex(UInt64(f.vendorID), digits: 4)) \(hex(f.nodeID)) "
                        + "\(f.rootFingerprint) \(hexLabel(f.label))\n"
            }.joined()
        case .window(let pairing, let seconds): "ok\nwindow \(pairing.passcode) \(pairing.discriminator) \(seconds)\n"
        case .done: "ok\n"
        case .error(let message): "error \(message.split(whereSeparator: \.isNewline).joined(separator: " "))\n"
        }
    }

    /// Reads an answer to `request`.
    public init(parsing text: String, for request: MatterControlRequest) throws(MatterControlError) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard let first = lines.first else {
            throw MatterControlError("the hub closed the connection without an answer")
        }
        if first.hasPrefix("error ") { self = .error(String(first.dropFirst(6))); return }
        guard first == "ok" else { throw MatterControlError("the hub's answer is not understood: \(first)") }
        let rest = lines.dropFirst().map { $0.split(separator: " ").map(String.init) }
        switch request {
        case .fabrics:
            var fabrics: [MatterFabricSummary] = []
            for words in rest {
                guard words.count == 7, words[0] == "fabric", let index = FabricIndex(words[1]),
                      let fabricID = UInt64(words[2], radix: 16), let vendor = UInt16(words[3], radix: 16),
                      let node = UInt64(words[4], radix: 16), let label = unhexLabel(words[6]) else {
                    throw MatterControlError("the hub's fabric line is not understood: \(words.joined(separator: " "))")
                }
                fabrics.append(MatterFabricSummary(index: index, fabricID: fabricID, vendorID: vendor, nodeID: node,
                                                   rootFingerprint: words[5], label: label))
            }
            self = .fabrics(fabrics)
        case .openWindow:
            guard let words = rest.first, words.count == 4, words[0] == "window", let passcode = UInt32(words[1]),
                  let discriminator = UInt16(words[2]), let seconds = Int(words[3]) else {
                throw MatterControlError("the hub's window line is not understood")
            }
            self = .window(MatterPairing(passcode: passcode, discriminator: discriminator), timeoutSeconds: seconds)
        case .remove, .reset:
            self = .done
        }
    }
}

private func hex(_ value: UInt64, digits: Int = 16) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

private func hexLabel(_ label: String) -> String {
    label.isEmpty ? "-" : label.utf8.map { hex(UInt64($0), digits: 2) }.joined()
}

private func unhexLabel(_ text: String) -> String? {
    if text == "-" { return "" }
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    var bytes: [UInt8] = []
    for i in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
        bytes.append(byte)
    }
    return String(decoding: bytes, as: UTF8.self)
}
