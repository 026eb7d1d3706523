import HearthLinux
import Testing

@Suite struct StartupPagesTests {
    /// The pages come back on their next use: code runs, and relocated read-only data (left alone) still
    /// points where it should — a string built through libc and the Swift runtime after the release.
    @Test func releasingLeavesTheProcessWhole() {
        let released = StartupPages.release()
        #expect(released > 0, "a running test process has resident code pages to give back")
        let text = (1...3).map { "line \($0)" }.joined(separator: "\n")
        #expect(text.split(separator: "\n").count == 3)
        #expect(StartupPages.release() >= 0)
    }
}
