import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// In a home of `hubCount` hubs × 100 devices, a request sent to hub1 for a device of hub0's
    /// (forwarded: it crosses the broker four times) against the same request sent to hub0 (direct) and the bare
    /// broker echo (a client that answers `bench/fwd-in` on `bench/fwd-out` with a response-sized payload),
    /// timed alternately. Goal: forwarded p50 ≤ 2.5× the echo's. Each request
    /// is sent twice: answered on the client's MQTT 5 response topic (HearthKit's way; a forwarded one is answered by
    /// the owner itself, three crossings: `DirectReply`), and watched on the hub's `responses` topic (a client without
    /// a response topic; a forwarded one is relayed by hub1, four crossings).
    static func homeForwarding(binDir: String, port: Int, work: String, hubCount: Int, requests: Int, run: Int, discovery: Bool = true) async throws {
        guard hubCount >= 2 else { return }
        let prefix = "fwd\(hubCount)r\(run)\(discovery ? "" : "n")"
        let watch = try await HomeWatch("bench-forward-watch-\(prefix)", port: port, prefix: prefix)
        let expected = hubCount * 100
        watch.reset { occurrences($0, #""connectivityState":"online""#) == expected }
        let hubs = startHome(binDir: binDir, port: port, work: work, prefix: prefix, hubCount: hubCount, discovery: discovery)
        defer { stopAll(hubs) }
        guard watch.waitForHomes(hubCount) != nil else { fail("a home of \(hubCount) hubs did not converge:\n" + readFile("\(work)/\(prefix)-0.log")) }
        watch.client.disconnect()
        usleep(1_000_000)

        let echo = try Endpoint("bench-forward-echo-\(prefix)", port: port)
        let reply = Array(#"{"transaction":"t","device":"h0-light-0","ok":true}"#.utf8)
        echo.client.onMessage = { [client = echo.client] _ in try? client.publish("bench/fwd-out", payload: reply) }
        try echo.client.subscribe("bench/fwd-in")
        _ = try await echo.client.connect()
        let client = try Endpoint("bench-forward-client-\(prefix)", port: port)
        try client.client.subscribe("bench/fwd-out")
        try client.client.subscribe("\(prefix)/hub0/responses")
        try client.client.subscribe("\(prefix)/hub1/responses")
        let inbox = "bench/fwd-client/inbox"
        try client.client.subscribe(inbox)
        _ = try await client.client.connect()

        let load = loadAverage()
        var echoTimes: [UInt64] = [], direct: [UInt64] = [], forwarded: [UInt64] = []
        var directReplied: [UInt64] = [], forwardedReplied: [UInt64] = []
        /// `settle`: a topic where the request is also answered after the client has its answer (a hub's `responses`);
        /// the next round trip starts once it has come, so that it does not share the broker with this one's tail.
        func roundTrip(_ topic: String, _ payload: [UInt8], answer: String, transaction: String?, settle: String? = nil) -> UInt64 {
            client.inbox.withLock { $0.removeAll() }
            let t = nanos()
            do {
                try client.client.publish(topic, payload: payload, responseTopic: answer == inbox ? inbox : nil)
            } catch { fail("cannot publish to \(topic): \(error)") }
            guard let m = client.wait({ m in m.topic == answer && (transaction.map { contains(m.payload, $0) } ?? true) }) else {
                fail("no answer on \(answer)")
            }
            let elapsed = nanos() - t
            if transaction != nil, !contains(m.payload, #""ok":true"#) { fail("a request failed: \(String(decoding: m.payload, as: UTF8.self))") }
            if let settle, client.wait({ m in m.topic == settle && (transaction.map { contains(m.payload, $0) } ?? true) }) == nil {
                fail("no answer on \(settle)")
            }
            return elapsed
        }
        for i in 0..<requests {
            echoTimes.append(roundTrip("bench/fwd-in", Array(#"{"trait":"onOff","command":"toggle"}"#.utf8), answer: "bench/fwd-out", transaction: nil))
            let device = "h0-light-\(i % 100)"
            let d = #""transaction":"d\#(i)""#, f = #""transaction":"f\#(i)""#
            direct.append(roundTrip("\(prefix)/hub0/devices/\(device)/set", Array(#"{\#(d),"trait":"onOff","command":"toggle"}"#.utf8),
                                    answer: "\(prefix)/hub0/responses", transaction: d))
            forwarded.append(roundTrip("\(prefix)/hub1/devices/\(device)/set", Array(#"{\#(f),"trait":"onOff","command":"toggle"}"#.utf8),
                                       answer: "\(prefix)/hub1/responses", transaction: f))
            let dr = #""transaction":"dr\#(i)""#, fr = #""transaction":"fr\#(i)""#
            directReplied.append(roundTrip("\(prefix)/hub0/devices/\(device)/set", Array(#"{\#(dr),"trait":"onOff","command":"toggle"}"#.utf8),
                                           answer: inbox, transaction: dr, settle: "\(prefix)/hub0/responses"))
            forwardedReplied.append(roundTrip("\(prefix)/hub1/devices/\(device)/set", Array(#"{\#(fr),"trait":"onOff","command":"toggle"}"#.utf8),
                                              answer: inbox, transaction: fr, settle: "\(prefix)/hub1/responses"))
        }
        echoTimes.sort(); direct.sort(); forwarded.sort(); directReplied.sort(); forwardedReplied.sort()
        let e = percentile(echoTimes, 0.5), dp = percentile(direct, 0.5), fp = percentile(forwarded, 0.5)
        let drp = percentile(directReplied, 0.5), frp = percentile(forwardedReplied, 0.5)
        print("forwarding in a home of \(hubCount) hubs × 100 devices, \(requests) requests each, timed alternately (load average \(load)\(discovery ? "" : ", Home Assistant discovery off"))")
        print("  broker echo (baseline): p50 \(us(e))  p99 \(us(percentile(echoTimes, 0.99)))")
        print("  direct (to hub0):       p50 \(us(dp)) (\(ratio(dp, e)))  p99 \(us(percentile(direct, 0.99)))")
        print("  forwarded (via hub1):   p50 \(us(fp)) (\(ratio(fp, e)), goal ≤ 2.5×; main: 6.3×)  p99 \(us(percentile(forwarded, 0.99)))")
        print("  with a response topic (MQTT 5, as HearthKit asks; a forwarded request is answered by its owner):")
        print("  direct (to hub0):       p50 \(us(drp)) (\(ratio(drp, e)))  p99 \(us(percentile(directReplied, 0.99)))")
        print("  forwarded (via hub1):   p50 \(us(frp)) (\(ratio(frp, e)), goal ≤ 2.5×)  p99 \(us(percentile(forwardedReplied, 0.99)))")
        client.client.disconnect()
        echo.client.disconnect()
    }
}
