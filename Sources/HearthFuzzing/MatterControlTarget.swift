import HearthHub

/// The Matter control socket's request reader (`MatterControlRequest`): it accepts exactly what an independent
/// recogniser of the four forms accepts (`fabrics`, `reset`, `open-window N` with N 0…65535, `remove N` with N
/// 1…254, decimal without leading zeros, one newline at the end, at most 64 bytes), an accepted request's line is the
/// input byte for byte, and a refusal says something.
enum MatterControlTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let expected = recognise(bytes)
        let outcome: Result<MatterControlRequest, MatterControlError>
        do { outcome = .success(try MatterControlRequest(parsing: bytes)) } catch { outcome = .failure(error) }
        switch outcome {
        case .success(let request):
            try require(request == expected,
                        "'\(shown(bytes))' read as \(request), expected \(expected.map { "\($0)" } ?? "a refusal")")
            try require(Array(request.line.utf8) == bytes,
                        "'\(shown(bytes))' read as \(request), whose line is '\(shown(Array(request.line.utf8)))'")
        case .failure(let error):
            try require(
                expected == nil, "'\(shown(bytes))' refused (\(error)), expected \(expected.map { "\($0)" } ?? "")")
            try require(!error.message.isEmpty, "'\(shown(bytes))' refused without a reason")
        }
    }

    private static func recognise(_ bytes: [UInt8]) -> MatterControlRequest? {
        guard bytes.count <= 64, bytes.last == 0x0A else { return nil }
        let text = String(decoding: bytes.dropLast(), as: UTF8.self)
        guard Array(text.utf8) == Array(bytes.dropLast()) else { return nil }
        if text == "fabrics" { return .fabrics }
        if text == "reset" { return .reset }
        func value(after prefix: String, in range: ClosedRange<Int>) -> Int? {
            guard text.hasPrefix(prefix) else { return nil }
            let digits = text.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ ("0"..."9").contains($0) }),
                  digits == "0" || digits.first != "0", let n = Int(digits), range.contains(n) else { return nil }
            return n
        }
        if let seconds = value(after: "open-window ", in: 0...65535) { return .openWindow(timeoutSeconds: seconds) }
        if let index = value(after: "remove ", in: 1...254) { return .remove(UInt8(index)) }
        return nil
    }
}
