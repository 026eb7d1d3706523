import Dispatch
import HearthFuzzing
import HearthTestKit
import Testing

/// Every input in `Tests/Fuzz/corpus/<target>/` — seeds written from the docs' examples, inputs libFuzzer kept for
/// new coverage, and every input that once broke a promise — run through its target without the fuzzer. A
/// finding fixed stays fixed.
///
/// The replay is seconds of CPU per target (3,754 inputs; `peer` and `request` build a home for each), so it runs on
/// a thread of its own, one target at a time: run on Swift's cooperative pool (as wide as the machine's cores: two
/// here) it held both of its threads for most of a minute, and every test that waits for an asynchronous event ran
/// out of time meanwhile. Its time limit is a hang guard, longer under a sanitizer (`peer` alone took over 5 minutes
/// under ThreadSanitizer).
@Suite(.serialized) struct CorpusReplayTests {
    static let corpus = Repository.path("Tests/Fuzz/corpus")

    @Test(.timeLimit(.minutes(Sanitizer.hangGuard(minutes: 5))), arguments: FuzzTarget.allCases)
    func theCorpusKeepsEveryPromise(_ target: FuzzTarget) async {
        let files = FuzzTarget.inputs(at: "\(Self.corpus)/\(target.rawValue)")
        #expect(files.count >= 3, "the \(target.rawValue) corpus has \(files.count) inputs")
        let failures = await withCheckedContinuation { done in
            DispatchQueue(label: "hearth.corpus-replay.\(target.rawValue)").async {
                done.resume(returning: target.replay(files))
            }
        }
        for (file, failure) in failures {
            Issue.record("\(file.split(separator: "/").suffix(2).joined(separator: "/")): \(failure)")
        }
    }
}
