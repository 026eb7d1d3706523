// Comparing and writing the generated directory. The generator is a build tool, so it may use Foundation.
import Foundation

public enum GeneratedDirectory {
    /// What differs between `files` and the `.swift` files under `directory`: one line each, "changed PATH",
    /// "missing PATH" or "stale PATH" (a file the generator no longer writes).
    public static func differences(_ files: [(path: String, text: String)], in directory: String) throws -> [String] {
        var lines: [String] = []
        let existing = Set(try swiftFiles(in: directory))
        for (path, text) in files {
            let full = "\(directory)/\(path)"
            guard existing.contains(path) else {
                lines.append("missing \(full)")
                continue
            }
            if try String(contentsOfFile: full, encoding: .utf8) != text { lines.append("changed \(full)") }
        }
        for path in existing.subtracting(files.map(\.path)).sorted() { lines.append("stale \(directory)/\(path)") }
        return lines
    }

    /// Writes `files` under `directory` and removes the `.swift` files there that are not among them.
    public static func write(_ files: [(path: String, text: String)], to directory: String) throws {
        let manager = FileManager.default
        for (path, text) in files {
            let full = "\(directory)/\(path)"
            try manager.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if (try? String(contentsOfFile: full, encoding: .utf8)) != text {
                try text.write(toFile: full, atomically: true, encoding: .utf8)
            }
        }
        let wanted = Set(files.map(\.path))
        for path in try swiftFiles(in: directory) where !wanted.contains(path) {
            try manager.removeItem(atPath: "\(directory)/\(path)")
        }
    }

    /// The `.swift` files under `directory`, relative to it.
    static func swiftFiles(in directory: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: directory) else { return [] }
        let all = FileManager.default.enumerator(atPath: directory)?.allObjects.compactMap { $0 as? String } ?? []
        return all.filter { $0.hasSuffix(".swift") }.sorted()
    }
}
