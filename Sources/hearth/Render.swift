// Text for humans: the device table, one device in detail, the changes between two documents.
import HearthKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum Render {
    // MARK: Values

    /// A value as `hearth get` shows it and `hearth set` reads it back: bitmaps as `{flag,flag}`, structs of numbers as
    /// `{field=1,field=2}`.
    static func value(_ json: JSON) -> String {
        switch json {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return s.isEmpty ? "\"\"" : sanitized(s)
        case .object(let members) where members.allSatisfy({ $0.value.boolValue != nil }):
            return "{" + members.filter { $0.value == .bool(true) }.map(\.key).joined(separator: ",") + "}"
        case .object(let members) where members.allSatisfy({ $0.value.intValue != nil }):
            // A struct of numbers (holdTimeLimits), as `key=value` pairs like the ones `hearth update` takes.
            return "{" + members.map { "\(sanitized($0.key))=\($0.value.intValue!)" }.joined(separator: ",") + "}"
        default: return sanitized(json.text)
        }
    }

    /// Text from the network with control characters made visible, so that a device name cannot move the cursor
    /// or change the terminal's colours.
    static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    static func hex(_ value: Int, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    static func connectivity(_ json: JSON?) -> String {
        let state = json?["connectivityState"]?.stringValue ?? "unknown"
        let locality = json?["dataSourceLocality"]?.stringValue ?? "unspecified"
        return "\(state), \(locality)"
    }

    // MARK: Columns

    /// How many terminal columns `text` takes: wide East Asian characters and emoji take two, combining marks none.
    static func width(_ text: String) -> Int {
        var total = 0
        for character in text {
            let scalars = character.unicodeScalars
            guard let first = scalars.first else { continue }
            if scalars.contains(where: { $0.properties.isEmojiPresentation }) || isWide(first.value)
                || scalars.contains(where: { $0.value == 0xFE0F }) {
                total += 2
            } else if first.properties.generalCategory == .nonspacingMark || first.properties.generalCategory == .format
            {
                continue
            } else {
                total += 1
            }
        }
        return total
    }

    private static func isWide(_ v: UInt32) -> Bool {
        (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
            || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
            || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v)
            || (0xFF00...0xFF60).contains(v) || (0xFFE0...0xFFE6).contains(v) || (0x20000...0x3FFFD).contains(v)
    }

    static func padded(_ text: String, to columns: Int) -> String {
        text + String(repeating: " ", count: max(0, columns - width(text)))
    }

    /// Rows in aligned columns, two spaces apart; the last column is not padded.
    static func table(_ rows: [[String]]) -> [String] {
        let count = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], width(cell)) } }
        return rows.map { row in
            var line = ""
            for (i, cell) in row.enumerated() {
                line += i == row.count - 1 ? cell : padded(cell, to: widths[i]) + "  "
            }
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    // MARK: Devices

    /// `hearth devices`: one row per device of the summary. `*` marks the primary type of a device with several.
    static func deviceTable(_ summary: JSON, withHub: Bool = false) -> [String] {
        var rows = [(withHub ? ["HUB"] : []) + ["ID", "NAME", "ROOM", "TYPES", "CONNECTIVITY"]]
        for device in summary.arrayValue {
            let types = device["types"]?.arrayValue ?? []
            let typeText = types.map { type in
                let name = sanitized(type["type"]?.stringValue ?? "?")
                return types.count > 1 && type["isPrimaryType"] == .bool(true) ? name + "*" : name
            }.joined(separator: ", ")
            rows.append((withHub ? [sanitized(device["hub"]?.stringValue ?? "?")] : []) + [
                sanitized(device["id"]?.stringValue ?? "?"), sanitized(device["name"]?.stringValue ?? ""),
                device["roomId"]?.stringValue.map(sanitized) ?? "-", typeText,
                connectivity(device["sourceConnectivity"]),
            ])
        }
        return table(rows)
    }

    /// `hearth get`: the device, each type, each trait with its attributes and commands.
    static func device(_ doc: JSON) -> [String] {
        var lines: [String] = []
        let id = sanitized(doc["id"]?.stringValue ?? "?")
        let name = sanitized(doc["name"]?.stringValue ?? "")
        lines.append(name.isEmpty || name == id ? id : "\(id)  \(name)")
        let room = doc["roomId"]?.stringValue.map(sanitized) ?? "-"
        let structure = doc["structureId"]?.stringValue.map(sanitized) ?? "-"
        let deviceConnectivity = connectivity(doc["sourceConnectivity"])
        var facts = ["room \(room)"]
        if structure != "-" { facts.append("structure \(structure)") }
        facts.append(deviceConnectivity)
        if doc["isMatterDevice"] == .bool(true) { facts.append("Matter device") }
        lines.append("  " + facts.joined(separator: "  ·  "))

        let types = doc["types"]?.arrayValue ?? []
        // One name column and one value column for the whole device, so that every value lines up.
        var nameWidth = width("commands"), valueWidth = 0
        for type in types {
            for (_, trait) in type["traits"]?.members ?? [] {
                for (name, info) in trait["attributeInfo"]?.members ?? [] {
                    nameWidth = max(nameWidth, width(sanitized(name)))
                    // A long value (a list of structs: a meter's accuracy) runs past the column instead of widening it.
                    valueWidth = max(valueWidth, min(maxValueColumn, width(attributeValue(trait, name, info))))
                }
            }
        }
        for type in types {
            var header = sanitized(type["type"]?.stringValue ?? "?")
            var notes: [String] = []
            if type["isPrimaryType"] == .bool(true) { notes.append("primary") }
            if let id = type["deviceTypeId"]?.intValue { notes.append(hex(id, digits: 4)) }
            let typeConnectivity = connectivity(type["sourceConnectivity"])
            if typeConnectivity != deviceConnectivity { notes.append(typeConnectivity) }
            if !notes.isEmpty { header += " (\(notes.joined(separator: ", ")))" }
            lines.append(header)
            for (traitName, trait) in type["traits"]?.members ?? [] {
                var traitHeader = "  " + sanitized(traitName)
                if let cluster = trait["clusterId"]?.intValue { traitHeader += " (\(hex(cluster, digits: 4)))" }
                let traitConnectivity = connectivity(trait["sourceConnectivity"])
                if traitConnectivity != typeConnectivity { traitHeader += "  \(traitConnectivity)" }
                lines.append(traitHeader)
                for (attribute, info) in trait["attributeInfo"]?.members ?? [] {
                    var flags: [String] = []
                    if info["supported"] == .bool(false) {
                        flags.append("not supported")
                    } else {
                        if info["writable"] == .bool(true) { flags.append("writable") }
                        if trait["attributes"]?[attribute] == .null && info["nullable"] == .bool(true) {
                            flags.append("nullable")
                        }
                    }
                    var line =
                        "    " + padded(sanitized(attribute), to: nameWidth) + "  "
                        + padded(attributeValue(trait, attribute, info), to: valueWidth) + "  "
                        + flags.joined(separator: ", ")
                    while line.last == " " { line.removeLast() }
                    lines.append(line)
                }
                let commands = (trait["commands"]?.arrayValue ?? []).compactMap(\.stringValue).map(sanitized)
                lines.append("    " + padded("commands", to: nameWidth) + "  "
                             + (commands.isEmpty ? "(none)" : commands.joined(separator: ", ")))
            }
        }
        return lines
    }

    /// The widest the value column grows.
    static let maxValueColumn = 60

    /// An attribute's value as `get` shows it: `-` when not supported, `?` when the document lacks it.
    private static func attributeValue(_ trait: JSON, _ attribute: String, _ info: JSON) -> String {
        if info["supported"] == .bool(false) { return "-" }
        return trait["attributes"]?[attribute].map(value) ?? "?"
    }

    /// One trait's attributes on one line: `onOff=true onTime=0`, after a command or a write.
    static func traitState(_ doc: JSON, type: String?, trait: String) -> String? {
        let types = doc["types"]?.arrayValue ?? []
        guard let match = types.first(where: { t in
            (type == nil || t["type"]?.stringValue == type) && t["traits"]?[trait] != nil
        }), let attributes = match["traits"]?[trait]?["attributes"] else { return nil }
        let values = attributes.members.map { "\(sanitized($0.key))=\(value($0.value))" }
        return "\(sanitized(doc["id"]?.stringValue ?? "?")) \(sanitized(trait)): \(values.joined(separator: " "))"
    }

    // MARK: Changes

    /// A document flattened to `path → shown value`, in document order, for `hearth watch`.
    static func flatten(_ doc: JSON) -> [(path: String, value: String)] {
        var out: [(path: String, value: String)] = []
        out.append(("name", value(doc["name"] ?? .null)))
        out.append(("room", doc["roomId"]?.stringValue.map(sanitized) ?? "(none)"))
        out.append(("structure", doc["structureId"]?.stringValue.map(sanitized) ?? "(none)"))
        out.append(("connectivity", connectivity(doc["sourceConnectivity"])))
        let types = doc["types"]?.arrayValue ?? []
        var traitCounts: [String: Int] = [:]
        for type in types { for (trait, _) in type["traits"]?.members ?? [] { traitCounts[trait, default: 0] += 1 } }
        for type in types {
            let typeName = type["type"]?.stringValue ?? "?"
            out.append(("\(typeName).connectivity", connectivity(type["sourceConnectivity"])))
            for (traitName, trait) in type["traits"]?.members ?? [] {
                // A trait on several types of the device is named with its type.
                let base = (traitCounts[traitName] ?? 0) > 1 ? "\(typeName).\(traitName)" : traitName
                out.append(("\(base).connectivity", connectivity(trait["sourceConnectivity"])))
                let attributes = trait["attributes"]
                for (attribute, info) in trait["attributeInfo"]?.members ?? [] {
                    let shown = info["supported"] == .bool(false) ? "(not supported)"
                        : attributes?[attribute].map(value) ?? "(none)"
                    out.append(("\(base).\(attribute)", shown))
                }
                let commands = (trait["commands"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ",")
                out.append(("\(base).commands", "[\(commands)]"))
            }
        }
        return out.map { (sanitized($0.path), $0.value) }
    }

    /// `path: old → new` for everything that differs, in the new document's order.
    static func changes(from old: JSON, to new: JSON) -> [String] {
        let before = flatten(old)
        var previous: [String: String] = [:]
        for (path, value) in before { previous[path] = value }
        let after = flatten(new)
        var seen = Set<String>()
        var lines: [String] = []
        for (path, value) in after {
            seen.insert(path)
            let old = previous[path]
            if old != value { lines.append("\(path): \(old ?? "(none)") → \(value)") }
        }
        for (path, value) in before where !seen.contains(path) { lines.append("\(path): \(value) → (gone)") }
        return lines
    }

    /// The local time as HH:MM:SS.
    static func clock() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
