import HearthFuzzing
import Testing

/// Every input in `Tests/Fuzz/corpus/<target>/` — seeds written from the docs' examples, inputs libFuzzer kept for
/// new coverage, and every input that once broke a promise — run through its target without the fuzzer. A
/// finding fixed stays fixed.
@Suite struct CorpusReplayTests {
    static let corpus: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)  // HearthFuzzingTests/CorpusReplayTests.swift
        return parts.joined(separator: "/") + "/Fuzz/corpus"
    }()

    @Test(.timeLimit(.minutes(5)), arguments: FuzzTarget.allCases)
    func theCorpusKeepsEveryPromise(_ target: FuzzTarget) {
        let files = FuzzTarget.inputs(at: "\(Self.corpus)/\(target.rawValue)")
        #expect(files.count >= 3, "the \(target.rawValue) corpus has \(files.count) inputs")
        for (file, failure) in target.replay(files) {
            Issue.record("\(file.split(separator: "/").suffix(2).joined(separator: "/")): \(failure)")
        }
    }
}
