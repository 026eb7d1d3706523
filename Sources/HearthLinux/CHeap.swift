#if canImport(Glibc)
import Glibc
#endif

/// What the hub tells glibc's allocator so that memory it freed goes back to the kernel.
///
/// glibc keeps freed memory in the arena of the thread that freed it, and a hub frees a lot at two moments: after
/// reading its configuration (the YAML tree), and after each connection's burst of publications (every device's
/// document, which libmosquitto copies into its queues and frees as the broker takes them).
/// Two of glibc's rules then keep that memory dirty for the process's life:
///
/// - An arena gives back the free space at its top only past `M_TRIM_THRESHOLD`, and glibc raises that threshold
///   to twice the largest block it has handed out through `mmap` and freed — one document buffer or queue past
///   128 KB, and the threshold is megabytes. `malloc_trim` does not help: it returns the pages of free blocks
///   inside a thread's arena, not its top.
/// - Free blocks inside an arena are only returned by `malloc_trim`.
///
/// ``keepThresholdsFixed(trimAbove:)`` sets the threshold once, which also turns glibc's raising of it off, and
/// ``trim()`` is `malloc_trim(0)`. glibc's `malloc.h` is not in Swift's Glibc module; the C library is linked
/// dynamically, so both are looked up, and on another C library they do nothing.
public enum CHeap {
    /// Sets `M_TRIM_THRESHOLD` (which fixes the mmap threshold at its default, 128 KB, too); returns whether glibc
    /// took it. Call it once, before the allocations it is meant for.
    @discardableResult
    public static func keepThresholdsFixed(trimAbove bytes: Int32 = 128 * 1024) -> Bool {
        #if canImport(Glibc)
        /// `M_TRIM_THRESHOLD` in glibc's malloc.h, stable since glibc 2.0.
        let trimThreshold: Int32 = -1
        guard let symbol = lookUp("mallopt") else { return false }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)(trimThreshold, bytes) == 1
        #else
        return false
        #endif
    }

    /// Returns every whole free page of every arena to the kernel (`malloc_trim(0)`); true when some went back.
    /// It takes each arena's lock for a moment: call it off the engine's lock and the network thread.
    @discardableResult
    public static func trim() -> Bool {
        #if canImport(Glibc)
        guard let symbol = lookUp("malloc_trim") else { return false }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0) == 1
        #else
        return false
        #endif
    }

    #if canImport(Glibc)
    private static func lookUp(_ name: String) -> UnsafeMutableRawPointer? {
        guard let libc = dlopen(nil, RTLD_NOW) else { return nil }
        return dlsym(libc, name)
    }
    #endif
}
