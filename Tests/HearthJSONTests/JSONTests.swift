@testable import HearthJSON
import Testing

@Suite struct JSONTests {
    func fails(_ text: String) -> JSONParseError? {
        do { _ = try JSON.parse(text); return nil } catch { return error }
    }

    @Test func parsesEveryKind() throws {
        let j = try JSON.parse(#" { "a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"} } "#)
        #expect(j["a"] == .array([.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null]))
        #expect(j["b"]?["c"] == .string("d"))
    }

    @Test func stringsUnescapeIncludingSurrogatePairs() throws {
        #expect(try JSON.parse(#""a\"b\\c\/\n\t\u00e9\ud83c\udfe0""#) == .string("a\"b\\c/\n\té🏠"))
        #expect(fails(#""\ud83c""#)?.message == "unpaired surrogate in \\u escape")
        #expect(fails(#""\q""#) != nil)
    }

    @Test func refusesWhatIsNotStrictJSON() {
        #expect(fails("{\"a\":1,\"a\":2}")?.message == "the key 'a' appears twice")
        #expect(fails("{\"a\":1} x")?.message == "unexpected data after the JSON value")
        #expect(fails("x")?.message == "unexpected character 'x'")
        #expect(fails("\u{FF}")?.message == "unexpected byte 0xC3")  // the first byte of ÿ's UTF-8, not 'Ã'
        #expect(fails("{'a':1}") != nil)
        #expect(fails("[1,]") != nil)
        #expect(fails("01") != nil)
        #expect(fails("1.") != nil)
        #expect(fails("\"a\u{1}\"") != nil)
        #expect(fails("") != nil)
        #expect(fails(String(repeating: "[", count: 40) + String(repeating: "]", count: 40))?.message
            == "JSON nested deeper than 32 levels")
    }

    /// Found by the `peer` fuzz target: a 1 MB summary of 90,000 keys held the network thread for minutes while
    /// each key was compared with every earlier one. Past eight keys they are hashed; duplicates are still refused,
    /// at the first and at the last position, with the offset of the second occurrence.
    @Test func manyKeysAreCheckedForDuplicatesInLinearTime() throws {
        let keys = (0..<50_000).map { "\"k\($0)\":\($0)" }
        let object = try JSON.parse("{" + keys.joined(separator: ",") + "}")
        #expect(object["k49999"] == .int(49_999))
        let late = "{" + keys.joined(separator: ",") + ",\"k0\":1}"
        #expect(fails(late)?.message == "the key 'k0' appears twice")
        #expect(fails(late)?.offset == late.utf8.count - 7)
        for count in 7...10 {  // around the switch from comparing to hashing
            let few = (0..<count).map { "\"k\($0)\":0" }.joined(separator: ",")
            #expect(fails("{" + few + ",\"k\(count - 1)\":1}")?.message == "the key 'k\(count - 1)' appears twice")
            #expect(try JSON.parse("{" + few + ",\"new\":1}")["new"] == .int(1))
        }
    }

    /// Found by the `json` fuzz target: 1e3088 was read as infinity and written back as `null`.
    @Test func aNumberBeyondADoubleIsRefused() throws {
        #expect(fails("1e400")?.message == "number out of range (beyond ±1.8e308)")
        #expect(fails("[-1e309]")?.offset == 1)
        #expect(try JSON.parse("1e308") == .double(1e308))
        #expect(try JSON.parse("99999999999999999999") == .double(1e20))  // beyond Int: a double, as before
    }

    @Test func invalidUTF8InAStringIsRefused() {
        let bytes: [UInt8] = Array("{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        #expect(throws: JSONParseError.self) { try JSON.parse(bytes) }
    }

    @Test func serialisesAndRoundTrips() throws {
        let j = JSON.object([("s", .string("q\"\\\n\u{1}é")), ("n", .int(-3)), ("a", .array([.null, .bool(true)]))])
        #expect(j.text == #"{"s":"q\"\\\n\u0001é","n":-3,"a":[null,true]}"#)
        #expect(try JSON.parse(j.text) == j)
    }
}
