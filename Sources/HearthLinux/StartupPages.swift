import Glibc

/// Gives back the pages of code and read-only data that only start-up needed.
///
/// VmRSS counts every page of the binary and its libraries that the process has touched, and the kernel
/// maps file pages up to 64 KB at a time around each fault. Start-up (argument parsing, the configuration,
/// the runtime's first type lookups, OpenSSL's initialisation in libmosquitto) touches megabytes of code
/// the hub never runs again. Once the configuration is read, and again once the hub is online, it drops its
/// mappings of clean, read-only file pages (`MADV_DONTNEED`): they stay in the page cache — the kernel could drop them itself under pressure, so
/// this changes nothing it relies on — and whatever the hub still runs comes back on a minor fault at its
/// next use. A mapping with any private copy (relocated data made read-only after loading) is left alone:
/// dropping it would lose the relocations.
public enum StartupPages {
    /// Releases the pages; returns how many kB were resident in the mappings released.
    @discardableResult
    public static func release() -> Int {
        guard let smaps = try? FileIO.read("/proc/self/smaps") else { return 0 }
        var released = 0
        var candidate: (start: UInt, end: UInt)?
        var rss = 0
        func finish(anonymous: Int) {
            defer { candidate = nil }
            guard let c = candidate, anonymous == 0, c.end > c.start else { return }
            if madvise(UnsafeMutableRawPointer(bitPattern: c.start), Int(c.end - c.start), MADV_DONTNEED) == 0 {
                released += rss
            }
        }
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                switch first {
                case "Rss:": rss = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
                case "Anonymous:": finish(anonymous: fields.count > 1 ? Int(fields[1]) ?? 1 : 1)
                default: break
                }
                continue
            }
            // A mapping's header: start-end perms offset dev inode [path]
            candidate = nil
            guard fields.count >= 6, fields[5].hasPrefix("/") else { continue }
            let perms = Array(fields[1].utf8)
            guard perms.count == 4, perms[1] != UInt8(ascii: "w"), perms[3] == UInt8(ascii: "p") else { continue }
            let bounds = first.split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else {
                continue
            }
            candidate = (start, end)
        }
        return released
    }
}
