// Hub benchmarks against a private loopback mosquitto, each figure next to a baseline from the same run:
// command→state round trip over the bare broker echo, memory with 100 devices, exec→online, CPU per
// command and idle CPU; then a home of several hubs (what a toggle on one costs the others), and a client
// subscribed to hearth/# with and without the broker's set_tcp_nodelay.
// Usage: HubBench <bin-dir> [--idle-seconds N] [--settle-seconds N] [--commands N] [--sequential] [--hubs N] [--home-toggles N]
//                 [--wildcard-commands N]
import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    print("bench: \(message)")
    exit(1)
}
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    close(fd)
    return Int(UInt16(bigEndian: a.sin_port))
}
func spawn(_ path: String, _ args: [String], output: String) -> pid_t {
    var pid = pid_t()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    // The child starts with no signal blocked and SIGTERM at its default: it would inherit the mask of whichever of
    // this process's threads spawns it, and a mosquitto with SIGTERM blocked outlives the bench.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    var none = sigset_t(), defaults = sigset_t()
    sigemptyset(&none)
    sigemptyset(&defaults)
    for s in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, s) }
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    defer { posix_spawnattr_destroy(&attributes) }
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
    let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    guard rc == 0 else { fail("cannot start \(path): \(String(cString: strerror(rc)))") }
    return pid
}
func write(_ text: String, to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
func readFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out += buf[..<n]
    }
    return String(decoding: out, as: UTF8.self)
}
func nanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
func percentile(_ sorted: [UInt64], _ p: Double) -> UInt64 { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
/// Whether `text`'s bytes occur in `bytes` (a plain search: the probe must stay cheap on two cores).
func contains(_ bytes: [UInt8], _ text: String) -> Bool {
    let needle = Array(text.utf8)
    guard needle.count <= bytes.count else { return false }
    for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
        if bytes[start..<start + needle.count].elementsEqual(needle) { return true }
    }
    return false
}
/// `part` as a percentage of `whole`, with three decimals.
func percent(_ part: UInt64, of whole: UInt64) -> String {
    let thousandths = part * 100_000 / max(whole, 1)
    let decimals = String(thousandths % 1000)
    return "\(thousandths / 1000).\(String(repeating: "0", count: 3 - decimals.count))\(decimals)%"
}
func us(_ ns: UInt64) -> String { String(Double(ns / 100) / 10) + " µs" }
func ratio(_ a: UInt64, _ b: UInt64) -> String { String(Double(a * 100 / max(b, 1)) / 100) + "×" }
/// Nanoseconds of CPU a process has used, all its threads (live and ended), from its CPU-time clock.
func cpuNanoseconds(_ pid: pid_t) -> UInt64 {
    var clock = clockid_t()
    guard clock_getcpuclockid(pid, &clock) == 0 else { return 0 }
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func status(_ pid: pid_t, _ key: String) -> String {
    readFile("/proc/\(pid)/status").split(separator: "\n").first { $0.hasPrefix(key + ":") }
        .map { $0.dropFirst(key.count + 1).trimmingPrefix(while: { $0 == " " || $0 == "\t" }) }.map(String.init) ?? "?"
}

/// One client whose received messages wake a waiter (blocking, not spinning: on two cores a spinning
/// probe would take a core from the broker and the hub it measures).
final class Endpoint: Sendable {
    let client: MQTTClient
    let inbox = Mutex<[MQTTMessage]>([])
    let arrived = DispatchSemaphore(value: 0)
    init(_ id: String, port: Int) throws {
        client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: id))
        client.onMessage = { [weak self] m in
            self?.inbox.withLock { $0.append(m) }
            self?.arrived.signal()
        }
    }
    func wait(timeoutNanos: UInt64 = 5_000_000_000, _ match: (MQTTMessage) -> Bool) -> MQTTMessage? {
        let deadline = DispatchTime.now().uptimeNanoseconds + timeoutNanos
        while true {
            if let m = inbox.withLock({ box -> MQTTMessage? in
                guard let i = box.firstIndex(where: match) else { return nil }
                return box.remove(at: i)
            }) { return m }
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return nil }
            _ = arrived.wait(timeout: .now() + .nanoseconds(Int(deadline - now)))
        }
    }
}

@main
enum HubBench {
    static func main() async throws {
        // MARK: Setup

        var arguments = Array(CommandLine.arguments.dropFirst())
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
        // The first version's method, for comparison: every echo round trip first, then every command.
        let sequential = arguments.contains("--sequential")
        arguments.removeAll { $0 == "--sequential" }
        guard let binDir = arguments.first else {
            print("usage: HubBench <bin-dir> [--idle-seconds N] [--settle-seconds N] [--commands N] [--sequential] [--hubs N] [--home-toggles N] [--wildcard-commands N]")
            exit(2)
        }
        let deviceCount = 100

        let work = String(cString: mkdtemp(strdup("/tmp/hearth-bench-XXXXXX")))
        let port = freePort()
        write("listener \(port) 127.0.0.1\nset_tcp_nodelay true\nallow_anonymous true\npersistence false\n" + (getuid() == 0 ? "user root\n" : ""),
              to: "\(work)/mosquitto.conf")
        let mosquitto = spawn(access("/usr/sbin/mosquitto", X_OK) == 0 ? "/usr/sbin/mosquitto" : "/usr/bin/mosquitto",
                              ["-c", "\(work)/mosquitto.conf"], output: "\(work)/mosquitto.log")
        defer { kill(mosquitto, SIGTERM) }
        usleep(300_000)

        // MARK: The baseline (the bare broker echo) and the hub with 100 devices, side by side

        // Both run for the whole measurement and are timed alternately, one round trip each in turn, so
        // that both see the same machine: a busy neighbour or a slower CPU moment weighs on both alike.
        let docSize = 1600
        let requestPayload = Array(#"{"trait":"onOff","command":"toggle"}"#.utf8)
        let echo = try Endpoint("bench-echo", port: port)
        let reply = [UInt8](repeating: UInt8(ascii: "x"), count: docSize)
        echo.client.onMessage = { [client = echo.client] m in
            try? client.publish("bench/out", payload: reply, qos: .atMostOnce, retain: true)
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
        write("name: bench-board\nsimulated: true\n", to: "\(work)/board.yaml")
        write("hub:\n  id: bench\n  board: board.yaml\n  stateDirectory: state\n  logLevel: warning\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n\(devices)",
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
        print("  broker echo (baseline):   p50 \(us(percentile(echoTimes, 0.5)))  p99 \(us(percentile(echoTimes, 0.99)))")
        print("  command → state:          p50 \(us(percentile(hubTimes, 0.5)))  p99 \(us(percentile(hubTimes, 0.99)))")
        print("  ratio:                    p50 \(ratio(percentile(hubTimes, 0.5), percentile(echoTimes, 0.5))) the echo's p50 (target ≤ 1.5×), p99 \(ratio(percentile(hubTimes, 0.99), percentile(echoTimes, 0.5))) the echo's p50 (target ≤ 3×)")
        print("  CPU per command:          \(us(hubCPU / UInt64(commandCount)))")
        print("  memory after the load:    VmRSS \(rss), VmHWM \(hwm)")
        print("  exec → online:            \(online / 1_000_000) ms (\(published) of \(deviceCount) documents before online, \(documents) just after)")
        print("  idle CPU over \(idleSeconds) s:       \(percent(idleNanos, of: UInt64(idleSeconds) * 1_000_000_000)) of a core (\(idleNanos / 1000) µs of CPU, target ≤ 0.01%)")
        print("  SIGTERM → exit:           \(stopped / 1_000_000) ms, status \((exitStatus >> 8) & 0xff)")

        try await homeOfHubs(binDir: binDir, port: port, work: work, hubCount: hubCount, toggles: homeToggles)
        try await wildcardClient(binDir: binDir, work: work, commands: wildcardCommands)
    }

    /// A client subscribed to `hearth/#` (as Home Assistant, MQTT Explorer and Node-RED subscribe) sending requests
    /// and waiting for each response, against a broker with `set_tcp_nodelay true` (the baseline: what every broker
    /// configuration Hearth ships says) and one with mosquitto's default, where Nagle's algorithm on the broker's
    /// socket meets the client's delayed ACK (docs/mqtt-api.md).
    static func wildcardClient(binDir: String, work: String, commands: Int) async throws {
        guard commands > 0 else { return }
        var medians: [Bool: UInt64] = [:]
        for nodelay in [true, false] {
            let port = freePort(), name = nodelay ? "nodelay" : "default"
            write("listener \(port) 127.0.0.1\n" + (nodelay ? "set_tcp_nodelay true\n" : "") + "allow_anonymous true\npersistence false\n"
                  + (getuid() == 0 ? "user root\n" : ""), to: "\(work)/mosquitto-\(name).conf")
            let broker = spawn(access("/usr/sbin/mosquitto", X_OK) == 0 ? "/usr/sbin/mosquitto" : "/usr/bin/mosquitto",
                               ["-c", "\(work)/mosquitto-\(name).conf"], output: "\(work)/mosquitto-\(name).log")
            defer { kill(broker, SIGTERM); var s: Int32 = 0; waitpid(broker, &s, 0) }
            usleep(300_000)
            let probe = try Endpoint("bench-wildcard-\(name)", port: port)
            try probe.client.subscribe("hearth/#")
            _ = try await probe.client.connect()
            write("hub:\n  id: wild\n  board: board.yaml\n  stateDirectory: state-wild-\(name)\n  logLevel: warning\n"
                  + "mqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n  - {id: lamp, type: OnOffLight}\n", to: "\(work)/wild-\(name).yaml")
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

    /// A home of several hubs on one broker, each with 100 devices and none mirroring another's (issue 21: each
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
                  + "mqtt:\n  host: 127.0.0.1\n  port: \(port)\n  prefix: home\ndevices:\n\(devices)", to: "\(work)/home-\(h).yaml")
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
        func privateDirty(_ pid: pid_t) -> String {
            readFile("/proc/\(pid)/smaps_rollup").split(separator: "\n").first { $0.hasPrefix("Private_Dirty:") }
                .map { $0.dropFirst("Private_Dirty:".count).trimmingPrefix(while: { $0 == " " }) }.map(String.init) ?? "?"
        }
        print("home of \(hubCount) hubs × 100 devices on one broker, none mirroring another's, \(toggles) toggles on hub0")
        print("  CPU per toggle, hub0 (baseline): \(us(spent[0] / UInt64(toggles)))")
        print("  CPU per toggle, each other hub:  \(us(others / UInt64(toggles))) (\(ratio(others, spent[0])) hub0's)")
        print("  Private_Dirty: hub0 \(privateDirty(hubs[0])), hub1 \(privateDirty(hubs[1]))")
    }
}
