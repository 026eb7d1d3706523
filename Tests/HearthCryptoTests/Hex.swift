// Test data written as hex, the way the published vectors print it, and a search in bytes.

/// The bytes of a hex string; spaces, newlines, commas and `0x` prefixes are ignored so vectors can be pasted as
/// printed. Traps on anything else: test data is fixed, so a typo is a bug in the test.
func hex(_ text: String) -> [UInt8] {
    let digits = text.split(whereSeparator: { " \n,".contains($0) })
        .map { $0.hasPrefix("0x") ? $0.dropFirst(2) : $0 }
        .joined()
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// Whether `needle` occurs in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}
