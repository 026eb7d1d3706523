import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// 100 `setRoom` on hub0 of a home of `hubCount` hubs × 100 devices (every hub mirroring the whole
    /// home): the home documents each hub publishes, the bytes published under the prefix (each message once, as a
    /// subscriber to `<prefix>/#` receives it), and the time until every hub's home shows the last change.
    /// The requests are sent one after the other, each after the previous one's response, as a script would.
    /// Goal: ≤ 5 home publications per hub and ≤ 5 MB in all.
    static func homeFanOut(binDir: String, port: Int, work: String, hubCount: Int, changes: Int, run: Int, discovery: Bool = true) async throws {
        guard hubCount >= 2 else { return }
        let prefix = "fan\(hubCount)r\(run)\(discovery ? "" : "n")"
        let watch = try await HomeWatch("bench-fanout-\(prefix)", port: port, prefix: prefix)
        let expected = hubCount * 100
        watch.reset { occurrences($0, #""connectivityState":"online""#) == expected }
        let hubs = startHome(binDir: binDir, port: port, work: work, prefix: prefix, hubCount: hubCount, discovery: discovery)
        defer { stopAll(hubs) }
        guard watch.waitForHomes(hubCount) != nil else { fail("a home of \(hubCount) hubs did not converge:\n" + readFile("\(work)/\(prefix)-0.log")) }
        usleep(1_000_000)  // every window of the start-up has ended
        let client = try Endpoint("bench-fanout-client-\(prefix)", port: port)
        try client.client.subscribe("\(prefix)/hub0/responses")
        _ = try await client.client.connect()

        let room = "room-\(run)"
        let changed = min(changes, 100)
        watch.reset { occurrences($0, #""roomId":"\#(room)""#) == changed }
        let load = loadAverage()
        let cpuBefore = hubs.map(cpuNanoseconds)
        let start = nanos()
        for i in 0..<changed {
            try client.client.publish("\(prefix)/hub0/devices/h0-light-\(i)/set",
                                      payload: Array(#"{"transaction":"r\#(i)","setRoom":"\#(room)"}"#.utf8), qos: .atLeastOnce)
            guard client.wait({ $0.topic == "\(prefix)/hub0/responses" && contains($0.payload, #""transaction":"r\#(i)""#) }) != nil else {
                fail("hub0 did not answer setRoom \(i)")
            }
        }
        let sent = nanos()
        guard let last = watch.waitForHomes(hubCount) else { fail("not every hub's home showed the last change") }
        usleep(1_000_000)  // anything still held for a window's end
        let cpu = zip(hubs.map(cpuNanoseconds), cpuBefore).map { $0 - $1 }
        let homes = watch.published(endingIn: "/home")
        let summaries = watch.published(endingIn: "/devices")
        let total = watch.counts.withLock { $0.total }
        let perHub = (0..<hubCount).map { homes.messages["\(prefix)/hub\($0)/home"] ?? 0 }
        print("metadata fan-out: \(changed) setRoom on hub0 of \(hubCount) hubs × 100 devices, one after the other (load average \(load)\(discovery ? "" : ", Home Assistant discovery off"))")
        print("  requests sent in \(milliseconds(sent - start)); every hub's home shows the last change \(milliseconds(last - start)) after the first")
        print("  home documents per hub: max \(perHub.max() ?? 0), hub0 \(perHub[0]), all \(perHub.reduce(0, +)) (goal ≤ 5 per hub; main: \(changed) per hub)")
        print("  hub0's summaries: \(summaries.messages["\(prefix)/hub0/devices"] ?? 0) (main: \(changed))")
        print("  published under the prefix (counted by a \(prefix)/# subscriber, each message once): \(megabytes(total)), "
              + "of which home documents \(megabytes(homes.bytes)) (goal ≤ 5 MB; main: 259 MB)")
        print("  CPU per change: hub0 \(us(cpu[0] / UInt64(changed))), each other hub \(us(cpu.dropFirst().reduce(0, +) / UInt64((hubCount - 1) * changed)))")
        client.client.disconnect()
        watch.client.disconnect()
    }
}
