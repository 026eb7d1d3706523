import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// A client subscribed to `hearth/#` (as Home Assistant, MQTT Explorer and Node-RED subscribe) sending requests
    /// and waiting for each response, against a broker with `set_tcp_nodelay true` (the baseline: what every broker
    /// configuration Hearth ships says) and one with mosquitto's default, where Nagle's algorithm on the broker's
    /// socket meets the client's delayed ACK (docs/mqtt-api.md).
    static func wildcardClient(binDir: String, work: String, commands: Int) async throws {
        guard commands > 0 else { return }
        var medians: [Bool: UInt64] = [:]
        for nodelay in [true, false] {
            let port = freePort(), name = nodelay ? "nodelay" : "default"
            let broker = startBroker(work: work, name: name, port: port, nodelay: nodelay)
            defer { kill(broker, SIGTERM); var s: Int32 = 0; waitpid(broker, &s, 0) }
            usleep(300_000)
            let probe = try Endpoint("bench-wildcard-\(name)", port: port)
            try probe.client.subscribe("hearth/#")
            _ = try await probe.client.connect()
            write("hub:\n  id: wild\n  board: board.yaml\n  stateDirectory: state-wild-\(name)\n  logLevel: warning\n"
                  + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n  - {id: lamp, type: OnOffLight}\n", to: "\(work)/wild-\(name).yaml")
            let hub = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/wild-\(name).yaml"], output: "\(work)/wild-\(name).log")
            defer { kill(hub, SIGTERM); var s: Int32 = 0; waitpid(hub, &s, 0) }
            guard probe.wait(timeoutNanos: 30_000_000_000, { $0.topic == "hearth/wild/status" && $0.payload == Array("online".utf8) }) != nil else {
                fail("the wildcard bench's hub did not come online:\n" + readFile("\(work)/wild-\(name).log"))
            }
            usleep(200_000)
            var times: [UInt64] = []
            for i in 0..<commands {
                probe.inbox.withLock { $0.removeAll() }
                let t = nanos()
                try probe.client.publish("hearth/wild/devices/lamp/set",
                                         payload: Array(#"{"transaction":"w\#(i)","trait":"onOff","command":"toggle"}"#.utf8))
                guard probe.wait({ $0.topic == "hearth/wild/responses" && contains($0.payload, #""w\#(i)""#) }) != nil else {
                    fail("no response to w\(i) (\(name) broker)")
                }
                times.append(nanos() - t)
            }
            times.sort()
            medians[nodelay] = percentile(times, 0.5)
        }
        print("a client subscribed to hearth/#, \(commands) requests each, waiting for each response")
        print("  broker with set_tcp_nodelay true (baseline): p50 \(us(medians[true]!))")
        print("  broker with mosquitto's default:             p50 \(us(medians[false]!)) (\(ratio(medians[false]!, medians[true]!)) the baseline)")
    }
}
