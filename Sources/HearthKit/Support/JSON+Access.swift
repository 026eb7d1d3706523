// Reading a published document without a pattern match at every step: `doc["types"]?.arrayValue`.
extension JSON {
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var arrayValue: [JSON] { if case .array(let a) = self { a } else { [] } }
    public var members: [(key: String, value: JSON)] { if case .object(let o) = self { o } else { [] } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var intValue: Int? { if case .int(let i) = self { i } else { nil } }
}

/// Text for messages: a whole number of seconds as `5 s`, else with its fraction.
func secondsText(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    if attoseconds == 0 { return "\(seconds) s" }
    return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
}

/// Random hex digits for this client's private topics and transactions.
func randomHex(_ bytes: Int) -> String {
    var text = ""
    for _ in 0..<bytes {
        let byte = UInt8.random(in: 0...255)
        text += String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
    }
    return text
}
