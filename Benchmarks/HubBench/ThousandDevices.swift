import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// One hub with many devices, beside the same hub with 100: exec → `online` with every document
    /// published, then `commands` toggles (each waiting for the device's new document), then the hub's memory as
    /// the kernel counts it: VmRSS and VmHWM (/proc/PID/status), and Pss and Private_Dirty (smaps_rollup), which
    /// count what the hub alone costs the machine (shared library pages split among their users, and the pages
    /// only this process wrote). Every 5th device is on a relay of a simulated board, so its requests take the
    /// lane path a device with hardware takes; the others are lights without hardware, half dimmable.
    static func thousandDevices(binDir: String, port: Int, work: String, sizes: [Int], commands: Int) async throws {
        guard commands > 0, !sizes.isEmpty else { return }
        let probe = try Endpoint("bench-thousand-probe", port: port)
        try probe.client.subscribe("many/+/devices/+")
        try probe.client.subscribe("many/+/status")
        _ = try await probe.client.connect()
        let request = Array(#"{"trait":"onOff","command":"toggle"}"#.utf8)
        print("one hub with many devices (every 5th on a simulated relay), \(commands) toggles each")
        for count in sizes {
            let hubID = "h\(count)"
            let relays = (count + 4) / 5
            write("name: bench-many\nsimulated: true\ngpio:\n  chips:\n    - label: bench-many\n      lines: \(min(1024, max(relays, 1)))\n",
                  to: "\(work)/board-many.yaml")
            var devices = ""
            for i in 0..<count {
                if i % 5 == 0 {
                    devices += "  - {id: d\(i), name: Relay \(i), type: OnOffLight, binding: {kind: relay, chip: bench-many, line: \(i / 5)}}\n"
                } else {
                    devices += "  - {id: d\(i), name: Light \(i), type: \(i % 2 == 0 ? "DimmableLight" : "OnOffLight")}\n"
                }
            }
            write("hub:\n  id: \(hubID)\n  board: board-many.yaml\n  stateDirectory: state-many-\(count)\n  logLevel: info\n"
                  + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\n  prefix: many\ndevices:\n\(devices)", to: "\(work)/many-\(count).yaml")
            probe.inbox.withLock { $0.removeAll() }
            let execStart = nanos()
            let hub = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/many-\(count).yaml"], output: "\(work)/many-\(count).log")
            defer { kill(hub, SIGTERM); var s: Int32 = 0; waitpid(hub, &s, 0) }
            guard probe.wait(timeoutNanos: 60_000_000_000, { $0.topic == "many/\(hubID)/status" && $0.payload == Array("online".utf8) }) != nil else {
                fail("the hub with \(count) devices did not come online:\n" + readFile("\(work)/many-\(count).log"))
            }
            let online = nanos() - execStart
            // The hub's own CPU up to here: on a shared, busy machine the wall-clock figure is mostly waiting for a core.
            let startupCPU = cpuNanoseconds(hub)
            let prefix = "many/\(hubID)/devices/"
            let before = probe.inbox.withLock { box in Set(box.filter { $0.topic.hasPrefix(prefix) }.map(\.topic)).count }
            // Everything is published before `online`; what is not here yet is in flight behind it.
            var documents = before
            for _ in 0..<50 where documents < count {
                usleep(20_000)
                documents = probe.inbox.withLock { box in Set(box.filter { $0.topic.hasPrefix(prefix) }.map(\.topic)).count }
            }
            guard documents == count else { fail("\(documents) of \(count) documents published") }
            let startup = (rss: status(hub, "VmRSS"), pss: smapsRollup(hub, "Pss"), dirty: smapsRollup(hub, "Private_Dirty"))
            var state = [Bool](repeating: false, count: count)
            var times: [UInt64] = []
            for i in 0..<commands {
                // Spread over the devices, relays included, not only the first hundred.
                let d = (i * 7919) % count
                state[d].toggle()
                let topic = prefix + "d\(d)"
                probe.inbox.withLock { $0.removeAll() }
                let t = nanos()
                try probe.client.publish("\(topic)/set", payload: request)
                guard let doc = probe.wait({ $0.topic == topic }) else { fail("no new state for \(topic)") }
                times.append(nanos() - t)
                guard contains(doc.payload, #""onOff":\#(state[d])"#) else { fail("\(topic) did not change to \(state[d])") }
            }
            // What the hub keeps, not what is still in flight: the hub trims its C heap two seconds after a
            // connection's burst of publications (HeapTrim), and the last documents are on their way.
            sleep(3)
            // For finding where the memory is: the whole smaps of the hub as it is measured below.
            if let dir = getenv("HUBBENCH_SMAPS") { write(readFile("/proc/\(hub)/smaps"), to: "\(String(cString: dir))/smaps-\(count)") }
            let first = Array(times.prefix(100)).sorted()
            times.sort()
            print("  \(count) devices:")
            print("    exec → online:          \(online / 1_000_000) ms, \(startupCPU / 1_000_000) ms of CPU (\(before) of \(count) documents before online, \(documents) just after)"
                  + (count >= 1000 ? "; goal ≤ 60 ms" : ""))
            // The hub's own account (its `online` line): exec → its last document and `online` written, and its CPU to
            // then, without the broker's delivery to the probe or the work the hub does after `online` (Home Assistant's
            // configs, one round trip later), which the figures above, read from outside once `online` arrives, include.
            let log = readFile("\(work)/many-\(count).log")
            if let line = log.split(separator: "\n").first(where: { $0.contains("ms after exec") }),
               let words = line.split(separator: " ").split(separator: "online").last {
                // "… online 44 ms after exec, 38 ms of CPU: 1000 devices published"
                print("    the hub's own line:     online \(words.prefix(8).joined(separator: " ").dropLast())")
            }
            print("    after start-up:         VmRSS \(startup.rss), Pss \(startup.pss), Private_Dirty \(startup.dirty)")
            print("    command → state:        p50 \(us(percentile(times, 0.5)))  p99 \(us(percentile(times, 0.99))); first 100: p50 \(us(percentile(first, 0.5)))  max \(us(first.last ?? 0))")
            print("    after \(commands) commands and 3 s: VmRSS \(status(hub, "VmRSS")), Pss \(smapsRollup(hub, "Pss")), Private_Dirty \(smapsRollup(hub, "Private_Dirty")), VmHWM \(status(hub, "VmHWM"))"
                  + (count >= 1000 ? " (goal Private_Dirty ≤ 6 MB)" : ""))
        }
    }
}
