import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// How long a home of `hubCount` hubs × 100 devices takes from the first exec until every hub's
    /// whole-home document lists every device of the home online (goal: ≤ 300 ms for 10 hubs, ≤ 1 s for 30), and
    /// how many home documents the start-up published. All hubs are started at once, none lists `peers:`.
    static func homeConvergence(binDir: String, port: Int, work: String, hubCounts: [Int], run: Int, discovery: Bool = true) async throws {
        for hubCount in hubCounts where hubCount >= 1 {
            let prefix = "conv\(hubCount)r\(run)\(discovery ? "" : "n")"
            let watch = try await HomeWatch("bench-convergence-\(prefix)", port: port, prefix: prefix)
            let expected = hubCount * 100
            watch.reset { occurrences($0, #""connectivityState":"online""#) == expected }
            // mosquitto logs this once for each client whose outgoing queue overflowed (a dropped peer summary
            // can keep a home from converging): counted over the case.
            let brokerLog = "\(work)/mosquitto-main.log", dropping = "Outgoing messages are being dropped"
            let droppingBefore = occurrences(Array(readFile(brokerLog).utf8), dropping)
            let load = loadAverage()
            let start = nanos()
            let hubs = startHome(binDir: binDir, port: port, work: work, prefix: prefix, hubCount: hubCount, discovery: discovery)
            defer { stopAll(hubs) }
            guard let converged = watch.waitForHomes(hubCount, timeoutNanos: 90_000_000_000) else {
                fail("a home of \(hubCount) hubs did not converge in 90 s:\n" + readFile("\(work)/\(prefix)-0.log"))
            }
            let cpu = hubs.map(cpuNanoseconds).reduce(0, +)
            usleep(1_000_000)  // what is still held for a window's end, and the heap settled
            let homes = watch.published(endingIn: "/home")
            let summaries = watch.published(endingIn: "/devices")
            print("home convergence: \(hubCount) hub(s) × 100 devices started at once (load average \(load)\(discovery ? "" : ", Home Assistant discovery off"))")
            print("  first exec → every home lists \(expected) devices online: \(milliseconds(converged - start)) "
                  + "(goal: ≤ 300 ms for 10 hubs, ≤ 1 s for 30)")
            print("  CPU of all hubs until then: \(milliseconds(cpu)); home documents published: \(homes.messages.values.reduce(0, +)) "
                  + "(max \(homes.messages.values.max() ?? 0) per hub), \(megabytes(homes.bytes)); summaries: "
                  + "\(summaries.messages.values.reduce(0, +))")
            print("  clients whose messages mosquitto dropped (\"\(dropping)\"): "
                  + "\(occurrences(Array(readFile(brokerLog).utf8), dropping) - droppingBefore)")
            print("  hub0 with \(hubCount - 1) peers × 100 devices: Private_Dirty \(smapsRollup(hubs[0], "Private_Dirty")), "
                  + "Pss \(smapsRollup(hubs[0], "Pss")), VmRSS \(status(hubs[0], "VmRSS"))"
                  + (hubCount > 1 ? " (goal with 9 peers: ≤ 1.3× a lone hub's Private_Dirty, the 1-hub case)" : ""))
            watch.client.disconnect()
        }
    }
}
