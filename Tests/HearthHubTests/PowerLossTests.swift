import Foundation
import HearthEngine
@testable import HearthHub
import HearthTestKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Power loss in the middle of a save, 200 times: `hearthd save-loop` runs the real `StateStore` save path in a
/// loop (a 200-device state, about 40 KB, written, flushed, renamed, the directory flushed) and is SIGKILLed at a
/// random moment; then the state is loaded as the next start would load it. SIGKILL stops the process between
/// any two instructions, like a power cut stops the CPU; what it does not cut is the kernel's page cache (the
/// flushes' part is held by the order of fsync and rename, docs/reliability.md). The time limit is longer under a
/// sanitizer, whose instrumented hearthd starts several times slower (168 of the 200 rounds in 5 minutes under
/// ThreadSanitizer).
@Suite(.serialized, .timeLimit(.minutes(Sanitizer.hangGuard(minutes: 5)))) struct PowerLossTests {
    @Test func aKillAtARandomMomentOfASaveLeavesTheLastOrThePreviousWholeState() async throws {
        let hearthd = try BuiltProduct.path("hearthd")
        let directory = NSTemporaryDirectory() + "hearth-power-loss-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = "\(directory)/state"
        let store = StateStore(directory: state)
        var previous = 0  // the generation the last round found
        var midSave = 0, betweenSaves = 0
        let started = ContinuousClock.now
        for round in 0..<200 {
            let output = "\(directory)/round-\(round).log"
            // Under nice (which execs it: the pid is hearthd's): 200 starts of a debug build in a row must not starve
            // the suites that run beside this one.
            let pid = try ChildProcess.spawn("/usr/bin/nice", ["-n", "10", hearthd, "save-loop", "--state", state],
                                             outputFile: output)
            // It has loaded what the last kill left (and said so) and is saving: now any moment is as good as another.
            let loaded = await poll(within: .seconds(30)) { lines(output).contains { $0.hasPrefix("saved ") } }
            #expect(loaded, "round \(round): no save within 30 s: \(lines(output))")
            #expect(lines(output).first == "loaded \(previous)", "round \(round): \(lines(output).prefix(3))")
            // The random moment: once 1–4 more saves have returned, seen by a poll whose period is itself random
            // (0.1–10 ms), so the kill lands anywhere in the save stream — between saves or inside one.
            let first = lines(output).compactMap { $0.hasPrefix("saved ") ? Int($0.dropFirst(6)) : nil }.first ?? 0
            let target = first + Int.random(in: 1...4)
            let reached = await poll(within: .seconds(30), every: .microseconds(Int.random(in: 100...10_000))) {
                lines(output).contains("saved \(target)")
            }
            kill(pid, SIGKILL)
            #expect(reached, "round \(round): save \(target) did not return within 30 s: \(lines(output).suffix(3))")
            #expect(ChildProcess.waitForExit(pid) == 128 + SIGKILL)

            let acknowledged =
                lines(output).compactMap { $0.hasPrefix("saved ") ? Int($0.dropFirst(6)) : nil }.last ?? 0
            let found = try store.load()
            #expect(found.warnings.isEmpty, "round \(round): \(found.warnings)")
            let generations = Set(found.devices.values.map { $0.name ?? "" })
            #expect(found.devices.count == 200 && generations.count == 1,
                    "round \(round): \(found.devices.count) devices, generations \(generations.sorted().prefix(3))")
            let generation = generations.first.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
            // The last save that returned, or the one after it if the kill came after its rename.
            #expect(generation == acknowledged || generation == acknowledged + 1,
                    "round \(round): found generation \(generation), the last acknowledged save was \(acknowledged)")
            if generation == acknowledged { betweenSaves += 1 } else { midSave += 1 }
            previous = generation
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter {
            $0 != "state.json" && $0 != "state.json.tmp"
        }
        #expect(leftovers.isEmpty, "\(leftovers)")
        // Kills after a rename but before its `saved` line: proof that the kills do land inside saves.
        print(
            "power loss: 200 rounds in \(ContinuousClock.now - started); found the acknowledged generation "
                + "\(betweenSaves) times, "
                + "the one in flight \(midSave) times")
    }

    private func lines(_ file: String) -> [String] {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
