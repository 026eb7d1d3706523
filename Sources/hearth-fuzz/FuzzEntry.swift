// The entry point of the fuzz targets in HearthFuzzing, built two ways from this one file:
//
// - By `scripts/fuzz`, with `-DHEARTH_LIBFUZZER`, as a libFuzzer binary: `LLVMFuzzerTestOneInput` runs the target
//   named by `HEARTH_FUZZ_TARGET`, and a broken promise becomes a crash, so libFuzzer keeps the input.
//   What works with SwiftPM 6.3.1, found by trying: `swift build --sanitize fuzzer` alone is what makes SwiftPM
//   link libFuzzer's own `main` instead of renaming this module's entry point (without it the link fails on an
//   undefined `hearth_fuzz_main`), but SwiftPM passes `--sanitize fuzzer --sanitize address` to swiftc as two
//   `-sanitize=` options and the driver keeps only the last, so Swift code would get no ASan checks; the script
//   therefore adds `-Xswiftc -sanitize=fuzzer,address`, which reaches every compile and the link. There is no
//   top-level code and no `@main` in that build (SwiftPM compiles a one-file executable that is not `main.swift`
//   with `-parse-as-library`), so libFuzzer's `main` is the only one. A separate `--scratch-path` keeps the
//   instrumented objects away from the normal build.
// - By a normal `swift build`, as `hearth-fuzz TARGET FILE|DIR…`: runs inputs once, without the fuzzer (the corpus
//   replay `swift test` does, from a shell; and the way to look at one crashing input under a debugger).
import HearthFuzzing
#if canImport(Glibc)
import Glibc
#endif

func printError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

#if HEARTH_LIBFUZZER

/// The target this process fuzzes, chosen once by `LLVMFuzzerInitialize`.
nonisolated(unsafe) var selected: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func initialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    guard let name = getenv("HEARTH_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name)
    else {
        let known = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        printError("hearth-fuzz: set HEARTH_FUZZ_TARGET to one of \(known)")
        exit(2)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    do throws(FuzzFailure) {
        try selected?.run(bytes)
    } catch {
        fatalError("hearth-fuzz \(selected?.rawValue ?? "?"): \(error)")
    }
    return 0
}
#else
@main struct Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let known = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            printError("usage: hearth-fuzz \(known) FILE|DIRECTORY...")
            exit(2)
        }
        let files = arguments.dropFirst().flatMap(FuzzTarget.inputs(at:))
        let failures = target.replay(files)
        for f in failures { print("\(f.file): \(f.failure)") }
        print("\(target.rawValue): \(files.count) inputs, \(failures.count) failed")
        exit(failures.isEmpty ? 0 : 1)
    }
}
#endif
