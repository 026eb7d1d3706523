import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// A home of several hubs on one broker, each with 100 devices and none mirroring another's (each
    /// hub pays only for what it uses). The baseline is the CPU the hub that runs the toggles spends on each;
    /// the figure, what each of the other hubs spends on it meanwhile, and their memory beside a lone hub's.
    static func homeOfHubs(binDir: String, port: Int, work: String, hubCount: Int, toggles: Int) async throws {
        guard hubCount >= 2 else { return }
        let probe = try Endpoint("bench-home-probe", port: port)
        try probe.client.subscribe("home/+/status")
        try probe.client.subscribe("home/hub0/devices/+")
        _ = try await probe.client.connect()
        var hubs: [pid_t] = []
        defer { for pid in hubs { kill(pid, SIGTERM); var s: Int32 = 0; waitpid(pid, &s, 0) } }
        for h in 0..<hubCount {
            var devices = ""
            for i in 0..<100 { devices += "  - {id: h\(h)-light-\(i), type: OnOffLight}\n" }
            write("hub:\n  id: hub\(h)\n  board: board.yaml\n  stateDirectory: state-home-\(h)\n  logLevel: warning\n"
                  + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\n  prefix: home\ndevices:\n\(devices)", to: "\(work)/home-\(h).yaml")
            hubs.append(spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/home-\(h).yaml"], output: "\(work)/home-\(h).log"))
            guard probe.wait(timeoutNanos: 30_000_000_000, { $0.topic == "home/hub\(h)/status" && $0.payload == Array("online".utf8) }) != nil else {
                fail("hub\(h) did not come online:\n" + readFile("\(work)/home-\(h).log"))
            }
        }
        // Every hub has read every other's summary and published its home document by now; let that settle.
        sleep(2)
        let request = Array(#"{"trait":"onOff","command":"toggle"}"#.utf8)
        let before = hubs.map(cpuNanoseconds)
        for i in 0..<toggles {
            let topic = "home/hub0/devices/h0-light-\(i % 100)"
            probe.inbox.withLock { $0.removeAll() }
            try probe.client.publish("\(topic)/set", payload: request)
            guard probe.wait({ $0.topic == topic }) != nil else { fail("no new state for \(topic)") }
        }
        usleep(300_000)  // what the other hubs still had in flight
        let spent = zip(hubs.map(cpuNanoseconds), before).map { $0 - $1 }
        let others = spent.dropFirst().reduce(0, +) / UInt64(hubCount - 1)
        print("home of \(hubCount) hubs × 100 devices on one broker, none mirroring another's, \(toggles) toggles on hub0")
        print("  CPU per toggle, hub0 (baseline): \(us(spent[0] / UInt64(toggles)))")
        print("  CPU per toggle, each other hub:  \(us(others / UInt64(toggles))) (\(ratio(others, spent[0])) hub0's; goal ≤ 5 µs)")
        print("  Private_Dirty: hub0 \(smapsRollup(hubs[0], "Private_Dirty")), hub1 \(smapsRollup(hubs[1], "Private_Dirty"))")
    }
}
