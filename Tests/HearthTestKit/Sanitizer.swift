// Which sanitizer the test process runs under, for the few tests whose subject or pace a sanitizer changes: under
// AddressSanitizer its allocator serves every block instead of glibc's, and an instrumented build (ThreadSanitizer's
// most) starts processes and runs CPU-bound work several times slower.
#if canImport(Glibc)
import Glibc
#endif

/// A sanitizer whose runtime is linked into the test process (`scripts/test-sanitizers`).
public enum Sanitizer: Sendable {
    case address, thread

    /// The sanitizer this process runs under, if any. Swift has no compile-time condition for one, and what matters
    /// is the process, not a module's flags: each runtime, linked into every sanitized executable, exports its
    /// `__asan_init` or `__tsan_init`.
    public static let current: Sanitizer? = {
        #if canImport(Glibc)
        guard let process = dlopen(nil, RTLD_NOW) else { return nil }
        defer { dlclose(process) }
        if dlsym(process, "__asan_init") != nil { return .address }
        if dlsym(process, "__tsan_init") != nil { return .thread }
        #endif
        return nil
    }()

    /// The minutes of a time limit that is `minutes` in a build without a sanitizer: six times as many under one.
    /// For a hang guard (`.timeLimit(.minutes(Sanitizer.hangGuard(minutes: 5)))`) on a test that starts hundreds of
    /// processes or replays a corpus, never for a bound on performance.
    public static func hangGuard(minutes: Int) -> Int { current == nil ? minutes : minutes * 6 }
}
