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
        if let before, let after { #expect(after < before, "RssFile \(before) kB → \(after) kB after releasing \(released) kB") }
        let text = (1...3).map { "line \($0)" }.joined(separator: "\n")
        #expect(text.split(separator: "\n").count == 3)
        // The code that just ran (this function, the runtime's string code) came back on its next use, so there
        // is something to release again.
        #expect(StartupPages.release() > 0)
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
