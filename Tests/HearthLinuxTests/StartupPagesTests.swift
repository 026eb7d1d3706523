@testable import HearthLinux
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct StartupPagesTests {
    /// The pages come back on their next use: code runs, and relocated read-only data (left alone) still
    /// points where it should — a string built through libc and the Swift runtime after the release.
    @Test func releasingLeavesTheProcessWhole() {
        let before = residentFileKilobytes()
        let released = StartupPages.release()
        #expect(released > 0, "a running test process has resident code pages to give back")
        let after = residentFileKilobytes()
        // What was released is no longer resident (RssFile falls), though parallel tests fault some back in.
        if let before, let after {
            #expect(after < before, "RssFile \(before) kB → \(after) kB after releasing \(released) kB")
        }
        let text = (1...3).map { "line \($0)" }.joined(separator: "\n")
        #expect(text.split(separator: "\n").count == 3)
        // The code that just ran (this function, the runtime's string code) came back on its next use, so there
        // is something to release again.
        #expect(StartupPages.release() > 0)
    }

    /// Only clean, read-only, private mappings of a file without a private copy are released.
    @Test func onlyCleanReadOnlyFileMappingsAreCandidates() {
        let smaps = """
            5593a000-5593b000 r--p 00000000 08:01 131 /usr/sbin/hearthd
            Size:                  4 kB
            Rss:                   4 kB
            Anonymous:             0 kB
            VmFlags: rd mr mw me sd
            5593b000-5693b000 r-xp 00001000 08:01 131                        /usr/sbin/hearthd
            Rss:                1200 kB
            Pss:                1200 kB
            Anonymous:             0 kB
            5693b000-5693c000 r--p 00101000 08:01 131 /usr/sbin/hearthd
            Rss:                   4 kB
            Anonymous:             4 kB
            5693c000-5693d000 rw-p 00102000 08:01 131 /usr/sbin/hearthd
            Rss:                   4 kB
            Anonymous:             4 kB
            7f0000000000-7f0000021000 rw-p 00000000 00:00 0
            Rss:                  16 kB
            Anonymous:            16 kB
            7f0000100000-7f0000200000 r--s 00000000 08:01 77 /var/cache/shared
            Rss:                  64 kB
            Anonymous:             0 kB
            7ffd0000000-7ffd0021000 r--p 00000000 00:00 0                          [vvar]
            Rss:                   8 kB
            Anonymous:             0 kB
            ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
            Rss:                   0 kB
            Anonymous:             0 kB

            """
        #expect(StartupPages.candidates(inSmaps: Array(smaps.utf8)) == [
            .init(start: 0x5593a000, end: 0x5593b000, rss: 4),
            .init(start: 0x5593b000, end: 0x5693b000, rss: 1200),
        ])
        #expect(StartupPages.candidates(inSmaps: Array("garbage\n-\n12-\nzz".utf8)).isEmpty)
        #expect(StartupPages.candidates(inSmaps: []).isEmpty)
    }

    /// RssFile from /proc/self/status: the resident pages of file mappings, in kB.
    func residentFileKilobytes() -> Int? {
        guard let status = try? FileIO.read("/proc/self/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("RssFile:") {
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }
}
