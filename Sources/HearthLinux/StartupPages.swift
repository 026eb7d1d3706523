import Glibc

/// Gives back the pages of code and read-only data that only start-up needed.
///
/// VmRSS counts every page of the binary and its libraries that the process has touched, and the kernel
/// maps file pages up to 64 KB at a time around each fault. Start-up (argument parsing, the configuration,
/// the runtime's first type lookups, OpenSSL's initialisation in libmosquitto) touches megabytes of code
/// the hub never runs again. Once the configuration is read, and again once the hub is online, it drops its
/// mappings of clean, read-only file pages (`MADV_DONTNEED`): they stay in the page cache — the kernel could drop
/// them itself under pressure, so this changes nothing it relies on — and whatever the hub still runs comes back on a
/// minor fault at its next use. A mapping with any private copy (relocated data made read-only after loading) is left
/// alone: dropping it would lose the relocations.
public enum StartupPages {
    /// A mapping that may be released: clean, read-only, private, of a file, with no private copy.
    struct Candidate: Equatable {
        var start: UInt
        var end: UInt
        /// Resident kB.
        var rss: Int
    }

    /// Releases the pages; returns how many kB were resident in the mappings released.
    @discardableResult
    public static func release() -> Int {
        guard let smaps = try? FileIO.readBytes("/proc/self/smaps") else { return 0 }
        var released = 0
        for c in candidates(inSmaps: smaps)
        where madvise(UnsafeMutableRawPointer(bitPattern: c.start), Int(c.end - c.start), MADV_DONTNEED) == 0 {
            released += c.rss
        }
        return released
    }

    /// The mappings of `/proc/self/smaps` that may be released.
    ///
    /// Scanned as bytes, not split into strings: the file has a dozen lines per mapping and a hub has about 500
    /// mappings (thread stacks, arenas, libraries), and splitting it into `String`s per line and field cost a 1,000-
    /// device hub more start-up CPU than the configuration's devices did (callgrind).
    static func candidates(inSmaps smaps: [UInt8]) -> [Candidate] {
        var found: [Candidate] = []
        var candidate: Candidate?
        smaps.withUnsafeBufferPointer { b in
            let n = b.count
            var i = 0
            /// Reads a hexadecimal number at `i`; nil when there is none.
            func hex() -> UInt? {
                var value: UInt = 0, digits = 0
                while i < n {
                    let c = b[i]
                    let d: UInt
                    switch c {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt(c - UInt8(ascii: "0"))
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt(c - UInt8(ascii: "a") + 10)
                    default: return digits > 0 && digits <= 16 ? value : nil
                    }
                    value = value &* 16 &+ d
                    digits += 1
                    i += 1
                }
                return nil
            }
            func skipSpaces() { while i < n, b[i] == UInt8(ascii: " ") { i += 1 } }
            func skipField() { while i < n, b[i] != UInt8(ascii: " "), b[i] != UInt8(ascii: "\n") { i += 1 } }
            func decimal() -> Int {
                skipSpaces()
                var value = 0
                while i < n, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
                    value = value &* 10 &+ Int(b[i] - UInt8(ascii: "0"))
                    i += 1
                }
                return value
            }
            func starts(with key: StaticString) -> Bool {
                let count = key.utf8CodeUnitCount
                guard n - i >= count else { return false }
                let k = key.utf8Start
                for j in 0..<count where b[i + j] != k[j] { return false }
                i += count
                return true
            }
            while i < n {
                let c = b[i]
                if (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
                    || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
                {
                    // A mapping's header: start-end perms offset dev inode [path]
                    candidate = nil
                    if let start = hex(), i < n, b[i] == UInt8(ascii: "-") {
                        i += 1
                        if let end = hex(), end > start, i + 5 <= n, b[i] == UInt8(ascii: " ") {
                            let readOnly = b[i + 2] != UInt8(ascii: "w"), isPrivate = b[i + 4] == UInt8(ascii: "p")
                            i += 5
                            for _ in 0..<3 { skipSpaces(); skipField() }  // offset, device, inode
                            skipSpaces()
                            if readOnly, isPrivate, i < n, b[i] == UInt8(ascii: "/") {
                                candidate = Candidate(start: start, end: end, rss: 0)
                            }
                        }
                    }
                } else if candidate != nil, starts(with: "Rss:") {
                    candidate!.rss = decimal()
                } else if let c = candidate, starts(with: "Anonymous:") {
                    // Any private copy (relocations) keeps the mapping.
                    if decimal() == 0 { found.append(c) }
                    candidate = nil
                }
                while i < n, b[i] != UInt8(ascii: "\n") { i += 1 }
                i += 1
            }
        }
        return found
    }
}
