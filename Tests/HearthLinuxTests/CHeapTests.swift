import HearthLinux
import HearthTestKit
import Testing

@Suite struct CHeapTests {
    /// glibc takes the threshold (the hub's memory figure in docs/benchmarks.md is what it does), and the heap
    /// still serves and trims after it. Under AddressSanitizer (`scripts/test-sanitizers address`) ASan's allocator
    /// serves every block instead and its `mallopt` takes nothing, so there the call must say glibc did not take it.
    @Test func glibcTakesTheFixedThresholdAndTheHeapGoesOn() {
        if Sanitizer.current == .address {
            #expect(!CHeap.keepThresholdsFixed(), "ASan's mallopt stands in for glibc's and takes nothing")
        } else {
            #expect(CHeap.keepThresholdsFixed(), "mallopt(M_TRIM_THRESHOLD) is glibc's; the hub is built on glibc")
        }
        // Blocks around the 128 KB mmap threshold, freed: what raised the thresholds before.
        var blocks: [[UInt8]] = []
        for size in [64 * 1024, 200 * 1024, 4 * 1024 * 1024] { blocks.append([UInt8](repeating: 7, count: size)) }
        #expect(blocks.map { $0.reduce(0) { $0 &+ Int($1) } } == [7 * 64 * 1024, 7 * 200 * 1024, 7 * 4 * 1024 * 1024])
        blocks.removeAll()
        CHeap.trim()
        #expect([UInt8](repeating: 1, count: 300 * 1024).count == 300 * 1024)
    }
}
