import HearthMQTT
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// What the heartbeat of hubs across a bridge costs an idle hub: two hubs with 100 devices each that name each other
    /// `route: remote` (each sends its heartbeat every 10 s, the default, and watches the other's) against the same two naming no
    /// peers (the baseline), on one broker, each pair idle for `seconds` after `settle` seconds.
    static func sitesIdle(binDir: String, port: Int, work: String, seconds: Int, settle: Int) async throws {
        let probe = try Endpoint("bench-sites-probe", port: port)
        try probe.client.subscribe("sites/+/status")
        _ = try await probe.client.connect()
        func idle(remote: Bool) -> [UInt64] {
            let names = ["attic", "shed"]
            var hubs: [pid_t] = []
            for (n, name) in names.enumerated() {
                var devices = ""
                for i in 0..<100 { devices += "  - {id: \(name)-light-\(i), type: OnOffLight}\n" }
                let peers = remote ? "peers:\n  - {hub: \(names[1 - n]), route: remote}\n" : ""
                let file = "\(work)/sites-\(name)-\(remote).yaml"
                write("hub:\n  id: \(name)\n  board: board.yaml\n  stateDirectory: state-sites-\(name)-\(remote)\n  logLevel: warning\n"
                      + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\n  prefix: sites\n\(peers)devices:\n\(devices)", to: file)
                probe.inbox.withLock { $0.removeAll() }
                hubs.append(spawn("\(binDir)/hearthd", ["run", "--config", file], output: "\(work)/sites-\(name).log"))
                guard probe.wait(timeoutNanos: 30_000_000_000, { $0.topic == "sites/\(name)/status" && $0.payload == Array("online".utf8) }) != nil else {
                    fail("\(name) did not come online:\n" + readFile("\(work)/sites-\(name).log"))
                }
            }
            defer { stopAll(hubs) }
            sleep(UInt32(settle))
            let before = hubs.map(cpuNanoseconds)
            sleep(UInt32(seconds))
            return zip(hubs.map(cpuNanoseconds), before).map { $0 - $1 }
        }
        let baseline = idle(remote: false)
        let beating = idle(remote: true)
        let whole = UInt64(seconds) * 1_000_000_000
        print("two hubs × 100 devices idle for \(seconds) s, naming each other route: remote (a heartbeat every 10 s, watched)")
        print("  idle CPU without peers (baseline): \(baseline.map { percent($0, of: whole) }.joined(separator: ", ")) of a core")
        print("  idle CPU with the heartbeat:       \(beating.map { percent($0, of: whole) }.joined(separator: ", ")) of a core (target ≤ 0.01%)")
        print("  the heartbeat's cost per hub:       \(us((beating.reduce(0, +) - min(beating.reduce(0, +), baseline.reduce(0, +))) / 2 / UInt64(seconds))) of CPU a second")
    }
}
