// Hub benchmarks against a private loopback mosquitto, each figure next to a baseline from the same run:
// command→state round trip over the bare broker echo, memory with 100 devices, exec→online, CPU per
// command and idle CPU; then a home of several hubs (what a toggle on one costs the others), and a client
// subscribed to hearth/# with and without the broker's set_tcp_nodelay; the idle CPU of two hubs with heartbeats
// (route: remote) against the same two without (`sites`); throughput and CPU per request under load
// (500 devices, 4 connections × 64 requests in flight) against an echo responder driven the same way; and a home of many hubs: the
// metadata fan-out, convergence, and a forwarded request against the echo; and one hub with 1,000 devices beside 100.
// Usage: HubBench <bin-dir> [--idle-seconds N] [--settle-seconds N] [--commands N] [--sequential] [--hubs N] [--home-toggles N]
//                 [--wildcard-commands N] [--fanout-hubs N] [--fanout-changes N] [--home-convergence-hubs N,N]
//                 [--forward-hubs N] [--forward-requests N] [--runs N] [--quick] [--no-discovery] [--only CASE,CASE] [--many-devices N]
//                 [--throughput-requests N] [--only-throughput]
//        HubBench <bin-dir> --soak-minutes N --soak-board PATH [--soak-rate N] [--soak-broker-restart-minutes N]
//                 [--soak-only KIND,KIND]  (scripts/soak)
// CASE: hub (the lone hub and its echo), home (toggles in a home), wildcard, fanout, convergence, forward, many (1,000 devices beside 100),
// throughput (--only-throughput: that case alone).
// --no-discovery: the home-of-many-hubs cases with Home Assistant discovery off. --quick: 5 hubs for the home cases, 200 requests, one run. --runs: how many times the home-of-many-hubs cases run.
import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

@main
enum HubBench {
    static func main() async throws {
        // MARK: Setup

        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == echoResponderOption, arguments.count == 3, let port = Int(arguments[1]), let size = Int(arguments[2]) {
            try await runEchoResponder(port: port, size: size)
        }
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count, let v = Int(arguments[i + 1]) else { return fallback }
            arguments.removeSubrange(i...(i + 1))
            return v
        }
        let idleSeconds = option("--idle-seconds", 30)
        let settleSeconds = option("--settle-seconds", 5)
        let commandCount = option("--commands", 2000)
        let hubCount = option("--hubs", 5), homeToggles = option("--home-toggles", 1000)
        let wildcardCommands = option("--wildcard-commands", 100)
        let soakMinutes = option("--soak-minutes", 0), soakRate = option("--soak-rate", 300)
        let soakBrokerRestart = option("--soak-broker-restart-minutes", 5)
        let soakBoard = arguments.firstIndex(of: "--soak-board").flatMap { i -> String? in
            guard i + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(i...(i + 1)) }
            return arguments[i + 1]
        }
        let discovery = !arguments.contains("--no-discovery")
        arguments.removeAll { $0 == "--no-discovery" }
        let quick = arguments.contains("--quick")
        arguments.removeAll { $0 == "--quick" }
        let fanoutHubs = option("--fanout-hubs", quick ? 5 : 10), fanoutChanges = option("--fanout-changes", 100)
        let forwardHubs = option("--forward-hubs", quick ? 5 : 10), forwardRequests = option("--forward-requests", quick ? 200 : 1000)
        let runs = option("--runs", quick ? 1 : 3)
        func list(_ name: String, _ fallback: [String]) -> [String] {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return fallback }
            defer { arguments.removeSubrange(i...(i + 1)) }
            return arguments[i + 1].split(separator: ",").map(String.init)
        }
        let convergenceHubs = list("--home-convergence-hubs", quick ? ["5"] : ["10", "30"]).compactMap { Int($0) }
        let cases = Set(list("--only", ["hub", "home", "wildcard", "sites", "fanout", "convergence", "forward", "many", "throughput"]))
        let manyDevices = option("--many-devices", 1000)
        // 20,250 over 500 devices: half of them end toggled an odd number of times, so a lost toggle shows.
        let throughputRequests = option("--throughput-requests", 20_250)
        let onlyThroughput = arguments.contains("--only-throughput")  // the same as --only throughput
        arguments.removeAll { $0 == "--only-throughput" }
        // The first version's method, for comparison: every echo round trip first, then every command.
        let sequential = arguments.contains("--sequential")
        arguments.removeAll { $0 == "--sequential" }
        guard let binDir = arguments.first else {
            print("usage: HubBench <bin-dir> [--idle-seconds N] [--settle-seconds N] [--commands N] [--sequential] [--hubs N] [--home-toggles N] [--wildcard-commands N]"
                  + " [--fanout-hubs N] [--fanout-changes N] [--home-convergence-hubs N,N] [--forward-hubs N] [--forward-requests N] [--runs N] [--quick] [--no-discovery] [--only CASE,CASE] [--many-devices N] [--throughput-requests N] [--only-throughput]")
            exit(2)
        }
        // A binary written moments ago (scripts/bench builds just before) is dirty in the page cache until the kernel
        // writes it back, and smaps counts its mapped text as Private_Dirty: about 7.5 MB of a static hearthd's text
        // that the hub never wrote. Written back first, every case's Private_Dirty (the soak's too) is what the hubs
        // themselves dirtied.
        sync()
        if soakMinutes > 0 {
            guard let soakBoard else { fail("--soak-minutes needs --soak-board <path of boards/sim.yaml>") }
            try await soak(binDir: binDir, minutes: soakMinutes, rate: soakRate, brokerRestartMinutes: soakBrokerRestart, board: soakBoard,
                           only: list("--soak-only", []))
            return
        }
        let deviceCount = 100

        let work = String(cString: mkdtemp(strdup("/tmp/hearth-bench-XXXXXX")))
        let port = freePort()
        let mosquitto = startBroker(work: work, name: "main", port: port)
        defer { kill(mosquitto, SIGTERM) }
        usleep(300_000)
        write("name: bench-board\nsimulated: true\n", to: "\(work)/board.yaml")

        /// The lone hub with 100 devices beside the bare broker echo.
        func loneHub() async throws {
            // MARK: The baseline (the bare broker echo) and the hub with 100 devices, side by side

            // Both run for the whole measurement and are timed alternately, one round trip each in turn, so
            // that both see the same machine: a busy neighbour or a slower CPU moment weighs on both alike.
            // The echo's reply is as long as the hub's average document, set once the hub has published them all
            // (1,600 bytes until then, the documents' size when this case was written; since Groups
            // and Scenes Management a light's document is about 4 KB, and an echo of 1.6 KB made the hub's ratio
            // look worse by the bytes alone).
            let requestPayload = Array(#"{"trait":"onOff","command":"toggle"}"#.utf8)
            let echo = try Endpoint("bench-echo", port: port)
            let reply = Mutex([UInt8](repeating: UInt8(ascii: "x"), count: 1600))
            echo.client.onMessage = { [client = echo.client] m in
                try? client.publish("bench/out", payload: reply.withLock { $0 }, qos: .atMostOnce, retain: true)
            }
            try echo.client.subscribe("bench/in")
            _ = try await echo.client.connect()
            let probe = try Endpoint("bench-probe", port: port)
            try probe.client.subscribe("bench/out", options: MQTTSubscriptionOptions(retainHandling: .never))
            // A client that watches state subscribes to the documents and the status, not to its own requests.
            try probe.client.subscribe("hearth/bench/devices/+")
            try probe.client.subscribe("hearth/bench/status")
            _ = try await probe.client.connect()

            var devices = ""
            for i in 0..<deviceCount {
                devices += "  - id: light-\(i)\n    name: Light \(i)\n    type: \(i % 2 == 0 ? "DimmableLight" : "OnOffLight")\n"
            }
            write("hub:\n  id: bench\n  board: board.yaml\n  stateDirectory: state\n  logLevel: warning\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n\(devices)",
                  to: "\(work)/hearth.yaml")
            usleep(200_000)
            probe.inbox.withLock { $0.removeAll() }
            let execStart = nanos()
            let hub = spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/hearth.yaml"], output: "\(work)/hearthd.log")
            guard probe.wait(timeoutNanos: 30_000_000_000, { $0.topic == "hearth/bench/status" && $0.payload == Array("online".utf8) }) != nil else {
                fail("the hub did not come online:\n" + readFile("\(work)/hearthd.log"))
            }
            let online = nanos() - execStart
            let published = probe.inbox.withLock { box in Set(box.filter { $0.topic.hasPrefix("hearth/bench/devices/") }.map(\.topic)).count }
            // Everything is published before `online`; the messages are already here or in flight behind it.
            usleep(200_000)
            let documents = probe.inbox.withLock { box in Set(box.filter { $0.topic.hasPrefix("hearth/bench/devices/") }.map(\.topic)).count }
            let sizes = probe.inbox.withLock { box in box.filter { $0.topic.hasPrefix("hearth/bench/devices/") }.map(\.payload.count) }
            let docSize = sizes.isEmpty ? 1600 : sizes.reduce(0, +) / sizes.count
            reply.withLock { $0 = [UInt8](repeating: UInt8(ascii: "x"), count: docSize) }

            // Echo: publish, wait for the echo. Hub: publish a toggle, wait for the device's new document.
            var echoTimes: [UInt64] = [], hubTimes: [UInt64] = []
            let dump = getenv("HUBBENCH_TRACE") != nil
            var trace: [(UInt64, UInt64)] = []
            let cpuBefore = cpuNanoseconds(hub)  // the hub is idle while the echo is timed
            var state = [Bool](repeating: false, count: deviceCount)
            func echoRoundTrip() throws {
                probe.inbox.withLock { $0.removeAll() }
                let t = nanos()
                try probe.client.publish("bench/in", payload: requestPayload)
                guard probe.wait({ $0.topic == "bench/out" }) != nil else { fail("the broker echo did not answer") }
                echoTimes.append(nanos() - t)
            }
            if sequential { for _ in 0..<commandCount { try echoRoundTrip() } }
            for i in 0..<commandCount {
                if !sequential { try echoRoundTrip() }
                let d = i % deviceCount
                state[d].toggle()
                let topic = "hearth/bench/devices/light-\(d)"
                probe.inbox.withLock { $0.removeAll() }
                let t = nanos()
                try probe.client.publish("\(topic)/set", payload: requestPayload)
                // Timed up to the document's arrival; its content is checked after the clock stops.
                guard let doc = probe.wait({ $0.topic == topic }) else { fail("no new state for \(topic)") }
                hubTimes.append(nanos() - t)
                if dump { trace.append((t, hubTimes[hubTimes.count - 1])) }
                guard contains(doc.payload, #""onOff":\#(state[d])"#) else { fail("\(topic) did not change to \(state[d])") }
            }
            let hubCPU = cpuNanoseconds(hub) - cpuBefore
            echoTimes.sort()
            hubTimes.sort()
            if dump { write(trace.map { "\($0.0) \($0.1)" }.joined(separator: "\n") + "\n", to: String(cString: getenv("HUBBENCH_TRACE"))) }
            let rss = status(hub, "VmRSS"), hwm = status(hub, "VmHWM")
            // Idle means idle: the load's threads are given a few seconds to wind down first.
            sleep(UInt32(settleSeconds))
            let idleBefore = cpuNanoseconds(hub)
            sleep(UInt32(idleSeconds))
            let idleNanos = cpuNanoseconds(hub) - idleBefore
            kill(hub, SIGTERM)
            var exitStatus: Int32 = 0
            let stopStart = nanos()
            waitpid(hub, &exitStatus, 0)
            let stopped = nanos() - stopStart

            print("hub, \(deviceCount) devices, \(commandCount) commands, loopback mosquitto")
            print(sequential ? "  (the echo timed first, then the hub: --sequential)"
                             : "  (the echo and the hub timed alternately, \(commandCount) round trips each)")
            print("  broker echo (baseline):   p50 \(us(percentile(echoTimes, 0.5)))  p99 \(us(percentile(echoTimes, 0.99)))  (a \(docSize)-byte reply: the hub's average document)")
            print("  command → state:          p50 \(us(percentile(hubTimes, 0.5)))  p99 \(us(percentile(hubTimes, 0.99)))")
            print("  ratio:                    p50 \(ratio(percentile(hubTimes, 0.5), percentile(echoTimes, 0.5))) the echo's p50 (target ≤ 1.5×), p99 \(ratio(percentile(hubTimes, 0.99), percentile(echoTimes, 0.5))) the echo's p50 (target ≤ 3×)")
            print("  CPU per command:          \(us(hubCPU / UInt64(commandCount)))")
            print("  memory after the load:    VmRSS \(rss), VmHWM \(hwm)")
            print("  exec → online:            \(online / 1_000_000) ms (\(published) of \(deviceCount) documents before online, \(documents) just after)")
            print("  idle CPU over \(idleSeconds) s:       \(percent(idleNanos, of: UInt64(idleSeconds) * 1_000_000_000)) of a core (\(idleNanos / 1000) µs of CPU, target ≤ 0.01%)")
            print("  SIGTERM → exit:           \(stopped / 1_000_000) ms, status \((exitStatus >> 8) & 0xff)")
        }

        if onlyThroughput || cases == ["throughput"] {
            try await throughput(binDir: binDir, work: work, requests: throughputRequests)
            return
        }
        if cases.contains("hub") { try await loneHub() }
        if cases.contains("home") { try await homeOfHubs(binDir: binDir, port: port, work: work, hubCount: hubCount, toggles: homeToggles) }
        if cases.contains("wildcard") { try await wildcardClient(binDir: binDir, work: work, commands: wildcardCommands) }
        if cases.contains("sites") {
            try await sitesIdle(binDir: binDir, port: port, work: work, seconds: idleSeconds, settle: settleSeconds)
        }
        for run in 1...max(1, runs) {
            if runs > 1 { print("== home of many hubs, run \(run) of \(runs)") }
            if cases.contains("convergence") { try await homeConvergence(binDir: binDir, port: port, work: work, hubCounts: convergenceHubs, run: run, discovery: discovery) }
            if cases.contains("fanout") { try await homeFanOut(binDir: binDir, port: port, work: work, hubCount: fanoutHubs, changes: fanoutChanges, run: run, discovery: discovery) }
            if cases.contains("forward") { try await homeForwarding(binDir: binDir, port: port, work: work, hubCount: forwardHubs, requests: forwardRequests, run: run, discovery: discovery) }
        }
        if cases.contains("many") {
            try await thousandDevices(binDir: binDir, port: port, work: work, sizes: manyDevices > 0 ? [100, manyDevices] : [],
                                      commands: commandCount)
        }
        if cases.contains("throughput") { try await throughput(binDir: binDir, work: work, requests: throughputRequests) }
    }
}
