// The soak (`scripts/soak`): a hub on the simulated board under a steady mixed load for N minutes, with
// a peer hub coming and going and the broker restarted every few minutes, sampled once a minute. What it shows is a
// trend, not a speed: memory, open descriptors and threads that stay flat, and a latency p99 that does not creep up.
// Pacing here sleeps on purpose: this is a load generator, not a test.
import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// What the soak's load client knows of its requests: when each was sent, and what came back in the current minute.
    struct SoakLedger: Sendable {
        var sent: [Int: UInt64] = [:]
        var latencies: [UInt64] = []
        var answered = 0, failed = 0, unavailable = 0, late = 0
        var errors: [String: Int] = [:]
    }

    /// The ledger behind a lock, shared with the load client's message callback.
    final class SoakLedgerBox: Sendable {
        let state = Mutex(SoakLedger())
    }

    /// One minute's sample of the hub.
    struct SoakSample {
        var minute: Int
        var privateDirty: Int, pss: Int, rss: Int, fds: Int, threads: Int
        var cpu: UInt64
        var sent: Int, answered: Int, unavailable: Int, failed: Int, lost: Int
        var p50: UInt64, p99: UInt64
    }

    static func soak(binDir: String, minutes: Int, rate: Int, brokerRestartMinutes: Int, board: String,
                     only: [String] = []) async throws {
        let work = String(cString: mkdtemp(strdup("/tmp/hearth-soak-XXXXXX")))
        let port = freePort()
        var broker = startBroker(work: work, name: "soak", port: port)
        defer { kill(broker, SIGTERM); var s: Int32 = 0; waitpid(broker, &s, 0) }
        usleep(300_000)

        // The hub: the simulated board's hardware (a relay light, a plug with a meter, a dimmer and a CCT strip that
        // fade, a humidity/temperature sensor drifting every second, a wall switch bound to the dimmer, a door contact
        // and a motion sensor), beside 91 lights without hardware, and a group over some of them.
        var devices = """
          - {id: porch-light, type: OnOffLight, binding: {kind: relay, pin: relay-1}}
          - {id: kitchen-lamp, type: DimmableLight, binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay, gamma: 2.2}}
          - {id: desk-strip, type: ColorTemperatureLight, binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, warmMireds: 370, coldMireds: 153, relay: cct-relay}}
          - id: bathroom-climate
            types:
              - {type: HumiditySensor, binding: {kind: humiditySensor, sensor: humidity-1, interval: 1s}}
              - {type: TemperatureSensor, binding: {kind: temperatureSensor, sensor: humidity-1, interval: 1s}}
          - {id: hall-switch, type: GenericSwitch, binding: {kind: wallSwitch, pin: wall-switch-1, mode: momentary, controls: kitchen-lamp}}
          - {id: front-door, type: ContactSensor, binding: {kind: contact, pin: door-contact}}
          - {id: hall-motion, type: OccupancySensor, binding: {kind: pir, pin: motion-sensor}}
          - {id: desk-plug, type: OnOffPlugInUnit, binding: {kind: relay, pin: relay-2, meter: {sensor: power-1, interval: 1s, snapshotInterval: 10s}}}

        """
        let plainLights = 91
        for i in 0..<plainLights { devices += "  - {id: light-\(i), type: \(i % 2 == 0 ? "DimmableLight" : "OnOffLight")}\n" }
        let groups = "groups:\n  - id: 1\n    name: Soak\n    members: [\((0..<10).map { "light-\($0)" }.joined(separator: ", "))]\n"
        write("hub:\n  id: soak\n  board: \(board)\n  stateDirectory: state-soak\n  logLevel: warning\n"
              + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n\(devices)\(groups)", to: "\(work)/soak.yaml")
        var peerDevices = ""
        for i in 0..<20 { peerDevices += "  - {id: peer-light-\(i), type: OnOffLight}\n" }
        write("name: peer-board\nsimulated: true\n", to: "\(work)/peer-board.yaml")
        write("hub:\n  id: peer\n  board: peer-board.yaml\n  stateDirectory: state-peer\n  logLevel: warning\n"
              + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n\(peerDevices)", to: "\(work)/peer.yaml")

        let watcher = try Endpoint("soak-watcher", port: port)
        try watcher.client.subscribe("hearth/+/status")
        _ = try await watcher.client.connect()
        let hub = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/soak.yaml"], output: "\(work)/soak.log")
        defer { kill(hub, SIGTERM); var s: Int32 = 0; waitpid(hub, &s, 0) }
        guard watcher.wait(timeoutNanos: 30_000_000_000, { $0.topic == "hearth/soak/status" && $0.payload == Array("online".utf8) }) != nil else {
            fail("the soak hub did not come online:\n" + readFile("\(work)/soak.log"))
        }
        var peer: pid_t? = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/peer.yaml"], output: "\(work)/peer.log")
        defer { if let peer { kill(peer, SIGTERM); var s: Int32 = 0; waitpid(peer, &s, 0) } }

        // The load client: requests on the hub's set topics, answers on its responses topic, matched by transaction.
        let ledger = SoakLedgerBox()
        let load = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: "soak-load"))
        load.onMessage = { [ledger] m in
            let now = nanos()
            guard let transaction = jsonString(m.payload, key: "transaction"), transaction.first == "s",
                  let n = Int(transaction.dropFirst()) else { return }
            let code = jsonString(m.payload, key: "code")
            ledger.state.withLock { l in
                guard let sent = l.sent.removeValue(forKey: n) else { l.late += 1; return }
                l.latencies.append(now - sent)
                switch code {
                case nil: l.answered += 1
                case "unavailable"?: l.unavailable += 1
                case let c?: l.failed += 1; l.errors[c, default: 0] += 1
                }
            }
        }
        try load.subscribe("hearth/soak/responses")
        _ = try await load.connect()

        emit("soak: \(minutes) min at \(rate) requests/s over \(plainLights + 8) devices (work directory \(work))")
        emit("  a peer hub of 20 devices up and down every minute; the broker restarted every \(brokerRestartMinutes) min")
        emit("  min  Private_Dirty  Pss      VmRSS    fds thr  CPU%    sent   ok     unavail fail lost  p50        p99")
        var samples: [SoakSample] = []
        var lostAtRestart = 0, lostOtherwise = 0
        var restarts: [UInt64] = []
        let start = nanos(), interval = 1_000_000_000 / UInt64(max(rate, 1))
        var next = start, sequence = 0, minute = 0, sentThisMinute = 0
        var cpuAtMinute = cpuNanoseconds(hub)
        var generator = SystemRandomNumberGenerator()
        var switchPressed = false
        while minute < minutes {
            // One request, then sleep until the next one is due (absolute deadlines, so pacing does not drift).
            sequence += 1
            let (topic, body) = soakRequest(sequence, plainLights: plainLights, only: only, switchPressed: &switchPressed, using: &generator)
            ledger.state.withLock { $0.sent[sequence] = nanos() }
            try? load.publish(topic, payload: Array(#"{"transaction":"s\#(sequence)",\#(body)}"#.utf8))
            sentThisMinute += 1
            next += interval
            var due = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil)

            let elapsed = nanos() - start
            // The peer hub comes and goes: up in even minutes, down (a clean stop) in odd ones.
            let second = Int(elapsed / 1_000_000_000)
            if second % 60 == 30 {
                let wantUp = (second / 60) % 2 == 1
                if wantUp, peer == nil {
                    peer = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/peer.yaml"], output: "\(work)/peer.log")
                } else if !wantUp, let p = peer {
                    kill(p, SIGTERM); var s: Int32 = 0; waitpid(p, &s, 0)
                    peer = nil
                }
            }
            // The broker is restarted (SIGKILL: no clean goodbye to anyone) every few minutes, mid-minute.
            if brokerRestartMinutes > 0, second % (brokerRestartMinutes * 60) == brokerRestartMinutes * 60 - 15,
               restarts.last.map({ nanos() - $0 > 2_000_000_000 }) ?? true {
                kill(broker, SIGKILL); var s: Int32 = 0; waitpid(broker, &s, 0)
                broker = startBroker(work: work, name: "soak", port: port)
                restarts.append(nanos())
            }
            guard elapsed >= UInt64(minute + 1) * 60_000_000_000 else { continue }

            // A minute is over: requests unanswered for 10 s are lost; those sent within 10 s of a broker restart
            // count apart (QoS 0 requests the broker held when it was killed are gone by design).
            let now = nanos()
            let (latencies, counts, lostHere) = ledger.state.withLock { l -> ([UInt64], (Int, Int, Int), (Int, Int)) in
                var atRestart = 0, otherwise = 0
                for (n, sent) in l.sent where now - sent > 10_000_000_000 {
                    l.sent[n] = nil
                    if restarts.contains(where: { sent + 10_000_000_000 > $0 && sent < $0 + 10_000_000_000 }) { atRestart += 1 } else { otherwise += 1 }
                }
                defer { l.latencies = []; l.answered = 0; l.unavailable = 0; l.failed = 0 }
                return (l.latencies.sorted(), (l.answered, l.unavailable, l.failed), (atRestart, otherwise))
            }
            lostAtRestart += lostHere.0
            lostOtherwise += lostHere.1
            let cpu = cpuNanoseconds(hub)
            let sample = SoakSample(
                minute: minute + 1,
                privateDirty: kilobytes(smapsRollup(hub, "Private_Dirty")), pss: kilobytes(smapsRollup(hub, "Pss")),
                rss: kilobytes(status(hub, "VmRSS")), fds: openDescriptors(hub), threads: Int(status(hub, "Threads")) ?? -1,
                cpu: cpu - cpuAtMinute, sent: sentThisMinute, answered: counts.0, unavailable: counts.1, failed: counts.2,
                lost: lostHere.0 + lostHere.1,
                p50: latencies.isEmpty ? 0 : percentile(latencies, 0.5), p99: latencies.isEmpty ? 0 : percentile(latencies, 0.99))
            samples.append(sample)
            cpuAtMinute = cpu
            sentThisMinute = 0
            minute += 1
            emit(soakRow(sample))
        }

        // The trend: the first minute is start-up; memory is compared from the end of minute 2 to the last minute,
        // latency by the least-squares slope of the per-minute p99.
        let errors = ledger.state.withLock { $0.errors }, late = ledger.state.withLock { $0.late }
        emit("  broker restarts: \(restarts.count); requests lost within 10 s of a restart: \(lostAtRestart), lost otherwise: \(lostOtherwise); "
              + "answered after 10 s: \(late); errors other than unavailable: \(errors.isEmpty ? "none" : errors.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))")
        if samples.count >= 3 {
            let first = samples[1], last = samples[samples.count - 1]
            func change(_ a: Int, _ b: Int) -> String { String(Double((b - a) * 1000 / max(a, 1)) / 10) + " %" }
            emit("  Private_Dirty minute 2 → \(last.minute): \(first.privateDirty) → \(last.privateDirty) kB (\(change(first.privateDirty, last.privateDirty)), promise: within 5 %)")
            emit("  Pss: \(first.pss) → \(last.pss) kB (\(change(first.pss, last.pss))); open descriptors: \(first.fds) → \(last.fds); threads: \(first.threads) → \(last.threads)")
            let points = samples.dropFirst().map { (Double($0.minute), Double($0.p99) / 1000) }
            let mx = points.map(\.0).reduce(0, +) / Double(points.count), my = points.map(\.1).reduce(0, +) / Double(points.count)
            let slope = points.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / max(points.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +), 1e-9)
            emit("  p99 per minute: mean \(Int(my)) µs, slope \(Int(slope * 10) / 10) µs a minute (promise: no upward trend)")
        }
        emit("  the hub's log: \(work)/soak.log (\(readFile("\(work)/soak.log").split(separator: "\n").count) lines)")
    }

    /// The request mix: mostly toggles on lights without hardware, fades on them and on the two PWM lights, relays
    /// with a lane (the porch light, the metered plug), requests for the peer's devices (forwarded while it is up,
    /// `unavailable` while it is down), the wall switch pressed and released, a group command, and a rename now and then.
    static func soakRequest(_ n: Int, plainLights: Int, only: [String], switchPressed: inout Bool,
                            using generator: inout SystemRandomNumberGenerator) -> (String, String) {
        let base = "hearth/soak/devices"
        let toggle = #""trait":"onOff","command":"toggle""#
        switch soakKind(n, only: only) {
        case "toggle":
            return ("\(base)/light-\(Int.random(in: 0..<plainLights, using: &generator))/set", toggle)
        case "fade":
            let light = 2 * Int.random(in: 0..<(plainLights / 2), using: &generator)
            return ("\(base)/light-\(light)/set", #""trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":\#(Int.random(in: 1...254, using: &generator)),"transitionTime":\#(Int.random(in: 5...30, using: &generator))}"#)
        case "relay":
            return ("\(base)/porch-light/set", toggle)
        case "plug":
            return ("\(base)/desk-plug/set", toggle)
        case "dimmer":
            return ("\(base)/kitchen-lamp/set", #""trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":\#(Int.random(in: 1...254, using: &generator)),"transitionTime":20}"#)
        case "cct":
            return ("\(base)/desk-strip/set", #""trait":"colorControl","command":"moveToColorTemperature","args":{"colorTemperatureMireds":\#(Int.random(in: 153...370, using: &generator)),"transitionTime":20}"#)
        case "peer":
            return ("\(base)/peer-light-\(Int.random(in: 0..<20, using: &generator))/set", toggle)
        case "switch":
            switchPressed.toggle()
            return ("\(base)/hall-switch/set", #""trait":"dev.hearth.simulatedSwitch","command":"\#(switchPressed ? "press" : "release")""#)
        case "group":
            return ("hearth/groups/1/set", toggle)
        case "rename":
            return ("\(base)/light-\(Int.random(in: 0..<plainLights, using: &generator))/set", #""setName":"Soak light \#(n)""#)
        default:
            return ("\(base)/bathroom-climate/set", #""get":true"#)
        }
    }

    /// The kinds of request, in a hundred: what the soak sends, in proportion.
    static let soakMix: [(kind: String, share: Int)] = [
        ("toggle", 68), ("fade", 10), ("relay", 3), ("plug", 3), ("dimmer", 2), ("cct", 2), ("peer", 7), ("switch", 2),
        ("group", 1), ("rename", 1), ("get", 1),
    ]
    static let soakKinds: [String] = soakMix.flatMap { Array(repeating: $0.kind, count: $0.share) }

    /// The kind of the `n`th request: by the mix, or, with `--soak-only`, only those kinds in turn (to find which kind
    /// of request a trend follows).
    static func soakKind(_ n: Int, only: [String]) -> String {
        only.isEmpty ? soakKinds[n % soakKinds.count] : only[n % only.count]
    }

    static func soakRow(_ s: SoakSample) -> String {
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        return "  " + pad("\(s.minute)", 5) + pad("\(s.privateDirty) kB", 15) + pad("\(s.pss) kB", 9) + pad("\(s.rss) kB", 9)
            + pad("\(s.fds)", 4) + pad("\(s.threads)", 5) + pad(percent(s.cpu, of: 60_000_000_000), 8) + pad("\(s.sent)", 7)
            + pad("\(s.answered)", 7) + pad("\(s.unavailable)", 8) + pad("\(s.failed)", 5) + pad("\(s.lost)", 6)
            + pad(us(s.p50), 11) + us(s.p99)
    }

    /// A line straight to standard output (print's buffer would hold a row a minute back until the end when the
    /// output is a file).
    static func emit(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
    }

    static func kilobytes(_ field: String) -> Int { Int(field.split(separator: " ").first ?? "") ?? -1 }

    static func openDescriptors(_ pid: pid_t) -> Int {
        guard let dir = opendir("/proc/\(pid)/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            // In place: copying the whole `dirent` reads past readdir's buffer at its last entry.
            let name = String(cString: UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { count += 1 }
        }
        return count
    }

    /// The string value of `"key":"…"` in a response (responses are flat enough for a byte search; the soak's load
    /// client must stay cheap).
    static func jsonString(_ bytes: [UInt8], key: String) -> String? {
        let needle = Array("\"\(key)\":\"".utf8)
        guard needle.count < bytes.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            guard bytes[start..<start + needle.count].elementsEqual(needle) else { continue }
            let from = start + needle.count
            guard let end = bytes[from...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: bytes[from..<end], as: UTF8.self)
        }
        return nil
    }
}
