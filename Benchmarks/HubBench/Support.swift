// What every HubBench case shares: processes, a private broker, files, clocks, percentiles, and a probe
// client that blocks on a semaphore while it waits.
import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Every process `spawn` started, so that `fail` leaves none running (an `exit` skips the cases' `defer`s).
let spawned = Mutex<[pid_t]>([])

func fail(_ message: String) -> Never {
    print("bench: \(message)")
    // Only a child still running: waitpid answers 0 for it, and -1 for a pid already reaped (maybe reused since).
    for pid in spawned.withLock({ $0 }) {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGTERM) }
    }
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
    spawned.withLock { $0.append(pid) }
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

/// The mosquitto binary: Debian installs it in /usr/sbin.
let mosquittoPath = access("/usr/sbin/mosquitto", X_OK) == 0 ? "/usr/sbin/mosquitto" : "/usr/bin/mosquitto"

/// Starts a private mosquitto on 127.0.0.1:`port` with `set_tcp_nodelay true` (what every broker configuration Hearth
/// ships says) unless `nodelay` is false; its configuration and log are `<work>/mosquitto-<name>.*`.
func startBroker(work: String, name: String, port: Int, nodelay: Bool = true) -> pid_t {
    write("listener \(port) 127.0.0.1\n" + (nodelay ? "set_tcp_nodelay true\n" : "") + "allow_anonymous true\npersistence false\n"
          + (getuid() == 0 ? "user root\n" : ""), to: "\(work)/mosquitto-\(name).conf")
    return spawn(mosquittoPath, ["-c", "\(work)/mosquitto-\(name).conf"], output: "\(work)/mosquitto-\(name).log")
}

/// A line of `/proc/<pid>/smaps_rollup` (`Private_Dirty`, `Pss`, …) as the kernel writes it, e.g. `3968 kB`.
func smapsRollup(_ pid: pid_t, _ key: String) -> String {
    readFile("/proc/\(pid)/smaps_rollup").split(separator: "\n").first { $0.hasPrefix(key + ":") }
        .map { $0.dropFirst(key.count + 1).trimmingPrefix(while: { $0 == " " }) }.map(String.init) ?? "?"
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

/// How many times `text`'s bytes occur in `bytes` (a plain search, like `contains`).
func occurrences(_ bytes: [UInt8], _ text: String) -> Int {
    let needle = Array(text.utf8)
    guard !needle.isEmpty, needle.count <= bytes.count else { return 0 }
    var n = 0, start = 0
    while start <= bytes.count - needle.count {
        if bytes[start] == needle[0], bytes[start..<start + needle.count].elementsEqual(needle) {
            n += 1
            start += needle.count
        } else {
            start += 1
        }
    }
    return n
}

/// Writes the configurations of `hubCount` hubs with 100 simulated lights each (`h<hub>-light-<i>`) under `prefix`,
/// no `peers:` listed (every hub mirrors the whole home), and starts them all at once; returns their pids.
/// `discovery: false` turns Home Assistant discovery off: with it on (the default), every hub announces 100 configs
/// of several KB and, at each connection, reads the retained ones of every hub (`<discovery prefix>/device/+/config`)
/// until its marker comes back (`docs/home-assistant.md`).
/// Each home has a discovery prefix of its own, so that one run's retained configurations do not reach the next.
func startHome(binDir: String, port: Int, work: String, prefix: String, hubCount: Int, discovery: Bool = true) -> [pid_t] {
    (0..<hubCount).map { h in
        var devices = ""
        for i in 0..<100 { devices += "  - {id: h\(h)-light-\(i), type: OnOffLight}\n" }
        write("hub:\n  id: hub\(h)\n  board: board.yaml\n  stateDirectory: state-\(prefix)-\(h)\n  logLevel: warning\n"
              + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\n  prefix: \(prefix)\n" + "homeAssistant:\n  discovery: \(discovery)\n  prefix: \(prefix)-ha\n"
              + "devices:\n\(devices)", to: "\(work)/\(prefix)-\(h).yaml")
        return spawn("\(binDir)/hearthd", ["run", "--config", "\(work)/\(prefix)-\(h).yaml"], output: "\(work)/\(prefix)-\(h).log")
    }
}

func stopAll(_ pids: [pid_t]) {
    for pid in pids { kill(pid, SIGTERM) }
    for pid in pids { var s: Int32 = 0; waitpid(pid, &s, 0) }
}

/// A subscriber to `<prefix>/#` that counts what is published under the prefix (each message once: payload and
/// topic bytes, per topic) and, for each hub's `home` document, when it first satisfied a test. It keeps no
/// payloads: the home documents of 30 hubs are some 800 KB each.
final class HomeWatch: Sendable {
    struct Counts {
        var messages: [String: Int] = [:]
        var bytes: [String: Int] = [:]
        var total = 0
        /// For each home topic, when (`nanos()`) it first carried a document that passed `test`.
        var passed: [String: UInt64] = [:]
        var test: (@Sendable ([UInt8]) -> Bool)?
    }
    let client: MQTTClient
    let counts = Mutex(Counts())
    let arrived = DispatchSemaphore(value: 0)

    init(_ id: String, port: Int, prefix: String) async throws {
        client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: id))
        client.onMessage = { [weak self] m in
            guard let self else { return }
            let test = counts.withLock { c -> (@Sendable ([UInt8]) -> Bool)? in
                c.messages[m.topic, default: 0] += 1
                c.bytes[m.topic, default: 0] += m.payload.count + m.topic.utf8.count
                c.total += m.payload.count + m.topic.utf8.count
                return m.topic.hasSuffix("/home") && c.passed[m.topic] == nil ? c.test : nil
            }
            if let test, test(m.payload) {
                let now = nanos()
                counts.withLock { c in if c.passed[m.topic] == nil { c.passed[m.topic] = now } }
                arrived.signal()
            }
        }
        try client.subscribe("\(prefix)/#")
        _ = try await client.connect()
    }

    /// Starts counting afresh; from now on a home document passes when `test` says so.
    func reset(_ test: @escaping @Sendable ([UInt8]) -> Bool) {
        counts.withLock { $0 = Counts(test: test) }
    }

    /// Waits until `count` home topics passed the test; returns when the last did, or nil at the timeout.
    func waitForHomes(_ count: Int, timeoutNanos: UInt64 = 30_000_000_000) -> UInt64? {
        let deadline = nanos() + timeoutNanos
        while true {
            let passed = counts.withLock { $0.passed }
            if passed.count >= count { return passed.values.max() }
            let now = nanos()
            if now >= deadline { return nil }
            _ = arrived.wait(timeout: .now() + .nanoseconds(Int(min(deadline - now, 100_000_000))))
        }
    }

    /// Messages and bytes on topics ending in `suffix`.
    func published(endingIn suffix: String) -> (messages: [String: Int], bytes: Int) {
        counts.withLock { c in
            (c.messages.filter { $0.key.hasSuffix(suffix) }, c.bytes.filter { $0.key.hasSuffix(suffix) }.values.reduce(0, +))
        }
    }
}

func megabytes(_ bytes: Int) -> String { String(Double(bytes / 10_000) / 100) + " MB" }
func milliseconds(_ ns: UInt64) -> String { "\(ns / 1_000_000) ms" }
/// The 1-minute load average, so that a reader can weigh the wall times.
func loadAverage() -> String { readFile("/proc/loadavg").split(separator: " ").first.map(String.init) ?? "?" }
