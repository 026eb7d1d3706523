import ArgumentParser
import HearthKit

/// `key=value` arguments of `set` and `update`, turned into the JSON the hub reads. The hub validates the result
/// (names, types, ranges) and answers with a precise error; this only decides which JSON type a word becomes.
///
/// The rule (also in `hearth set --help`):
/// - `key:=JSON` sends the JSON as written: `name:='"42"'`, `optionsMask:='{"executeIfOff":true}'`.
/// - `null`, `true`, `false` are JSON's literals; `-12`, `300` integers; `2.5` a number (the hub will refuse it).
/// - `{}` is a bitmap with no flag set; `{a,b}` and `a,b` (names separated by commas) are the bitmap
///   `{"a":true,"b":true}`: flags not named are false.
/// - A single name is a string (enums are sent by name: `startUpOnOff=toggle`), except for a bitmap: a command field
///   whose name ends in `Mask`, `Override` or `Control` (`optionsMask`, `onOffControl`), or an attribute whose
///   current value is a bitmap (`options`). There `optionsMask=executeIfOff` is `{"executeIfOff":true}`.
/// - Anything else is a string.
enum ArgumentValues {
    static let bitmapSuffixes = ["Mask", "Override", "Control"]

    static func parse(_ items: [String], bitmapNames: Set<String> = []) throws -> [(key: String, value: JSON)] {
        var members: [(key: String, value: JSON)] = []
        for item in items {
            guard let equals = item.firstIndex(of: "=") else {
                throw ValidationError("'\(item)' is not key=value (e.g. level=127, optionsMask=executeIfOff)")
            }
            var key = String(item[..<equals])
            let text = String(item[item.index(after: equals)...])
            let raw = key.hasSuffix(":")
            if raw { key.removeLast() }
            guard !key.isEmpty else { throw ValidationError("'\(item)' has no name before '='") }
            guard !members.contains(where: { $0.key == key }) else { throw ValidationError("'\(key)' is given twice") }
            let value: JSON
            if raw {
                do throws(JSONParseError) {
                    value = try JSON.parse(text)
                } catch {
                    throw ValidationError("\(key):= needs JSON: \(error)")
                }
            } else {
                let isBitmap = bitmapNames.contains(key) || bitmapSuffixes.contains { key.hasSuffix($0) }
                value = try self.value(text, bitmap: isBitmap, key: key)
            }
            members.append((key, value))
        }
        return members
    }

    static func value(_ text: String, bitmap: Bool, key: String) throws -> JSON {
        switch text {
        case "null": return .null
        case "true": return .bool(true)
        case "false": return .bool(false)
        default: break
        }
        if isInteger(text), let i = Int(text) { return .int(i) }
        if isDecimal(text), let d = Double(text) { return .double(d) }
        if text.hasPrefix("{") && text.hasSuffix("}") {
            let inner = text.dropFirst().dropLast()
            let flags = inner.split(separator: ",").map { $0.trimmingSpaces }.filter { !$0.isEmpty }
            guard flags.allSatisfy(isName) else {
                throw ValidationError(
                    "\(key)=\(text): write a bitmap as {flag,flag} with flag names, or use \(key):=JSON")
            }
            return bitmapJSON(flags)
        }
        if text.contains(",") {
            let flags = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
            let named = flags.filter { !$0.isEmpty }
            // "executeIfOff,coupleColorTempToLevel" (and "executeIfOff," for one flag) is a bitmap; "Kitchen, left"
            // stays a string.
            if !named.isEmpty, named.allSatisfy(isName), flags.dropLast().allSatisfy({ !$0.isEmpty }) {
                return bitmapJSON(named)
            }
            return .string(text)
        }
        if bitmap && isName(Substring(text)) { return bitmapJSON([Substring(text)]) }
        return .string(text)
    }

    static func bitmapJSON(_ flags: [Substring]) -> JSON {
        var members: [(key: String, value: JSON)] = []
        for flag in flags where !members.contains(where: { $0.key == String(flag) }) {
            members.append((String(flag), .bool(true)))
        }
        return .object(members)
    }

    static func isName(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return false }
        return text.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" }
    }

    static func isInteger(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy { ("0"..."9").contains($0) }
    }

    static func isDecimal(_ text: String) -> Bool {
        let body = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { ("0"..."9").contains($0) } }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}
