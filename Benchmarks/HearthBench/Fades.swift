// Fades on time under load: a whole hub (HubDaemon, as hearthd runs it, in this process) with 50
// PWM dimmers on a sysfs-shaped PWM tree in memory (/dev/shm) and 100 lights without hardware, on a private
// loopback mosquitto. Every dimmer runs a 10 s fade while a client sends 1,000 unrelated requests a second; each
// duty write is recorded as it is made (the backend wraps the real sysfs PWM channel and notes the monotonic time
// just before the write). The reference is the same configuration assembled the same way on the engine's injected
// clock, stepped 20 ms at a time: which duty each step writes. Against it: how late each write is behind its step
// on the 20 ms grid, which steps were skipped or written twice, and whether each channel ends on the exact duty.
import HearthConfig
import HearthEngine
import HearthHardware
import HearthHardwareLinux
import HearthHub
import HearthLinux
import HearthModel
import HearthMQTT
import Logging
import Dispatch
import Synchronization
import Glibc

/// Every duty write of every channel, with the monotonic time just before it.
final class DutyLog: Sendable {
    struct Write: Sendable { var channel: Int; var nanos: UInt64; var duty: UInt64 }
    let writes = Mutex<[Write]>([])
    func clear() { writes.withLock { $0.removeAll(keepingCapacity: true) } }
}

/// A sysfs PWM channel that notes each duty write in a `DutyLog`.
final class RecordedPWM: PWMOutput {
    let inner: any PWMOutput
    let channel: Int
    let log: DutyLog
    init(_ inner: any PWMOutput, channel: Int, log: DutyLog) { self.inner = inner; self.channel = channel; self.log = log }
    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMOutputPolarity) throws(HardwareError) {
        try inner.start(periodNanoseconds: periodNanoseconds, dutyCycleNanoseconds: dutyCycleNanoseconds, polarity: polarity)
    }
    func setDutyCycle(_ nanoseconds: UInt64) throws(HardwareError) {
        let t = monotonicNanos()
        log.writes.withLock { $0.append(.init(channel: channel, nanos: t, duty: nanoseconds)) }
        try inner.setDutyCycle(nanoseconds)
    }
    func stop() throws(HardwareError) { try inner.stop() }
}

/// The kernel's hardware under a temporary root, with PWM channels recorded.
struct RecordedHardware: HardwareBackend {
    let linux: LinuxHardware
    let log: DutyLog
    func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive) throws(HardwareError) -> any OutputLine {
        try linux.openOutput(pin, initialValue: initialValue, activeLow: activeLow, drive: drive)
    }
    func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any EngineClock) throws(HardwareError) -> any InputLine {
        try linux.openInput(pin, bias: bias, activeLow: activeLow, clock: clock)
    }
    func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput {
        RecordedPWM(try linux.openPWM(pwm), channel: pwm.channel, log: log)
    }
    func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource {
        try linux.openSensor(sensor, quantity: quantity)
    }
    func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError) -> any PowerMeterSource {
        try linux.openPowerMeter(meter, shuntMicroohms: shuntMicroohms)
    }
}

/// The daemon's provider with the recorded backend.
struct RecordedProvider: HardwareProvider {
    let root: String
    let log: DutyLog
    func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board? { BoardHardware().loadBoard(file: file, diagnostics: diagnostics) }
    func backend(for board: Board) -> any HardwareBackend {
        RecordedHardware(linux: LinuxHardware(root: SysfsRoot(root)), log: log)
    }
    func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)? {
        BoardHardware().makeBinding(config, context: context)
    }
    var traitServers: [any TraitServer.Type] { BoardHardware().traitServers }
}

func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

private func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: a.sin_port))
}

private func writeFile(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

private func readFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 256)
    let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    return n > 0 ? String(decoding: buf[..<n], as: UTF8.self) : ""
}

/// A sysfs-shaped PWM chip with `channels` channels, already exported, under `root`.
private func makePWMTree(_ root: String, channels: Int) {
    let chip = root + "/sys/class/pwm/pwmchip0"
    for dir in [root + "/sys", root + "/sys/class", root + "/sys/class/pwm", chip] { mkdir(dir, 0o755) }
    writeFile(chip + "/npwm", "\(channels)\n")
    writeFile(chip + "/export", "")
    writeFile(chip + "/unexport", "")
    for c in 0..<channels {
        mkdir(chip + "/pwm\(c)", 0o755)
        writeFile(chip + "/pwm\(c)/period", "0\n")
        writeFile(chip + "/pwm\(c)/duty_cycle", "0\n")
        writeFile(chip + "/pwm\(c)/polarity", "normal\n")
        writeFile(chip + "/pwm\(c)/enable", "0\n")
    }
}

/// Dimmer `i` fades up from 1 to 254 when even, down from 254 to 1 when odd.
private func fadeLevels(_ i: Int) -> (from: Int, to: Int) { i % 2 == 0 ? (1, 254) : (254, 1) }

private func configuration(dimmers: Int, loadDevices: Int, port: Int, state: String) -> String {
    var text = "hub:\n  id: fades\n  board: board.yaml\n  stateDirectory: \(state)\n  logLevel: warning\n"
        + "mqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n"
    for i in 0..<dimmers { text += "  - {id: dim-\(i), type: DimmableLight, binding: {kind: pwmDimmer, pwmChip: 0, pwmChannel: \(i)}}\n" }
    for i in 0..<loadDevices { text += "  - {id: load-\(i), type: OnOffLight}\n" }
    return text
}

/// Per channel, the step (20 ms each, from the fade command) at which each duty is written, on the injected clock.
private func reference(dimmers: Int, work: String) throws -> [[UInt64: Int]] {
    let root = work + "/reference-root"
    mkdir(root, 0o755)
    makePWMTree(root, channels: dimmers)
    writeFile(work + "/reference.yaml", configuration(dimmers: dimmers, loadDevices: 0, port: 1883, state: work + "/reference-state"))
    let log = DutyLog()
    let provider = RecordedProvider(root: root, log: log)
    let plan: HubDaemon.Plan
    switch HubDaemon.plan(configFile: work + "/reference.yaml", hardware: provider, logger: Logger(label: "reference"),
                          diagnostics: ConfigDiagnostics()) {
    case .success(let p): plan = p
    case .failure(let error): fatalError("reference configuration: \(error.problems)")
    }
    let clock = ManualClock()
    let home = try Home(devices: plan.devices, clock: clock, registry: HubDaemon.registry(provider))
    for (_, binding) in plan.bindings { binding.start(home: home) }
    for i in 0..<dimmers {
        try home.invoke("dim-\(i)", trait: "levelControl", command: "moveToLevelWithOnOff",
                        arguments: ["level": .int(fadeLevels(i).from), "transitionTime": .int(0)])
    }
    home.drainLanes()
    log.clear()
    for i in 0..<dimmers {
        try home.invoke("dim-\(i)", trait: "levelControl", command: "moveToLevelWithOnOff",
                        arguments: ["level": .int(fadeLevels(i).to), "transitionTime": .int(100)])
    }
    home.drainLanes()
    var steps = [[UInt64: Int]](repeating: [:], count: dimmers)
    for w in log.writes.withLock({ $0 }) { steps[w.channel][w.duty] = 0 }
    log.clear()
    for k in 1...520 {
        clock.advance(by: 20)
        home.advance(to: clock.now)
        home.drainLanes()
        for w in log.writes.withLock({ $0 }) {
            precondition(steps[w.channel][w.duty] == nil, "the reference wrote duty \(w.duty) twice on channel \(w.channel)")
            steps[w.channel][w.duty] = k
        }
        log.clear()
    }
    for (_, binding) in plan.bindings { binding.stop() }
    return steps
}

/// The load thread's stop flag and how many requests it has sent.
final class LoadCounters: Sendable {
    let stop = Atomic<Bool>(false)
    let sent = Atomic<Int>(0)
}

final class Inbox: Sendable {
    let messages = Mutex<[MQTTMessage]>([])
    let arrived = DispatchSemaphore(value: 0)
    func wait(seconds: Int, _ match: (MQTTMessage) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + .seconds(seconds)
        while true {
            if messages.withLock({ $0.contains(where: match) }) { return true }
            if arrived.wait(timeout: deadline) == .timedOut { return false }
        }
    }
}

func fadesUnderLoad(dimmers: Int = 50, loadDevices: Int = 100, loadPerSecond: Int = 1000) async throws {
    let work = String(cString: mkdtemp(strdup("/tmp/hearth-fades-XXXXXX")))
    // The sysfs-shaped tree in memory (/dev/shm, a tmpfs on Debian) when there is one, as sysfs is: a write to a file
    // on ext4 (/tmp here) also costs journalling and writeback that a PWM write never does. The hub's state
    // directory stays on the disk, as on a board.
    let memory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    let root = String(cString: mkdtemp(strdup(memory + "/hearth-fades-sysfs-XXXXXX")))
    defer { removeFileTree(work); removeFileTree(root) }
    writeFile(work + "/board.yaml", "name: fade-bench\n")
    let steps = try reference(dimmers: dimmers, work: work)

    // The broker.
    let port = freeLoopbackPort()
    writeFile(work + "/mosquitto.conf", "listener \(port) 127.0.0.1\nset_tcp_nodelay true\nallow_anonymous true\npersistence false\nlog_dest none\n"
              + (getuid() == 0 ? "user root\n" : ""))
    let mosquittoPath = access("/usr/sbin/mosquitto", X_OK) == 0 ? "/usr/sbin/mosquitto" : "/usr/bin/mosquitto"
    var broker = pid_t()
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup(mosquittoPath), strdup("-c"), strdup(work + "/mosquitto.conf"), nil]
    guard posix_spawn(&broker, mosquittoPath, nil, nil, argv, environ) == 0 else { fatalError("cannot start mosquitto") }
    // SIGKILL: a child spawned from a thread that blocks SIGTERM inherits the block.
    defer { kill(broker, SIGKILL) }
    usleep(300_000)

    // The hub, in this process.
    makePWMTree(root, channels: dimmers)
    writeFile(work + "/hearth.yaml", configuration(dimmers: dimmers, loadDevices: loadDevices, port: port, state: work + "/state"))
    let log = DutyLog()
    var logger = Logger(label: "hearthd")
    logger.logLevel = .warning
    let configFile = work + "/hearth.yaml"
    Task.detached { [logger] in
        _ = await HubDaemon.run(configFile: configFile, hardware: RecordedProvider(root: root, log: log), logger: logger)
    }

    let inbox = Inbox()
    let client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: "fade-bench"))
    client.onMessage = { m in inbox.messages.withLock { $0.append(m) }; inbox.arrived.signal() }
    try client.subscribe("hearth/fades/status")
    try client.subscribe("hearth/fades/responses")
    _ = try await client.connect()
    guard inbox.wait(seconds: 30, { $0.topic == "hearth/fades/status" && $0.payload == Array("online".utf8) }) else {
        fatalError("the hub did not come online")
    }
    @Sendable func request(_ device: String, _ body: String) {
        try? client.publish("hearth/fades/devices/\(device)/set", payload: Array(body.utf8))
    }
    for i in 0..<dimmers {
        request("dim-\(i)", #"{"trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":\#(fadeLevels(i).from),"transitionTime":0}}"#)
    }
    sleep(1)

    // The load: `loadPerSecond` toggles a second on absolute 1/loadPerSecond deadlines, on a thread of its own.
    let load = LoadCounters()
    let loadDone = DispatchSemaphore(value: 0)
    DispatchQueue(label: "hearth.bench.load").async {
        guard loadPerSecond > 0 else { loadDone.signal(); return }
        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        let interval = 1_000_000_000 / loadPerSecond
        var i = 0
        while !load.stop.load(ordering: .relaxed) {
            request("load-\(i % loadDevices)", #"{"trait":"onOff","command":"toggle"}"#)
            i += 1
            load.sent.store(i, ordering: .relaxed)
            next.tv_nsec += interval
            if next.tv_nsec >= 1_000_000_000 { next.tv_nsec -= 1_000_000_000; next.tv_sec += 1 }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil)
        }
        loadDone.signal()
    }
    sleep(1)
    log.clear()
    let responsesBefore = inbox.messages.withLock { box in box.filter { $0.topic == "hearth/fades/responses" }.count }
    let loadBefore = load.sent.load(ordering: .relaxed)
    let fadeStart = monotonicNanos()
    for i in 0..<dimmers {
        request("dim-\(i)", #"{"trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":\#(fadeLevels(i).to),"transitionTime":100}}"#)
    }
    sleep(11)
    let loadSeconds = Double(monotonicNanos() - fadeStart) / 1e9
    let loadSent = load.sent.load(ordering: .relaxed) - loadBefore
    let responses = inbox.messages.withLock { box in box.filter { $0.topic == "hearth/fades/responses" }.count } - responsesBefore
    load.stop.store(true, ordering: .relaxed)
    loadDone.wait()
    let writes = log.writes.withLock { $0 }

    // Against the reference.
    var late: [UInt64] = []
    // Each write's step deadline on the monotonic clock: the writes of one engine tick share it, whatever channel.
    var ticks: [UInt64: [UInt64]] = [:]
    var skipped = 0, twice = 0, unexpected = 0, wrongFinal = 0, expected = 0
    for c in 0..<dimmers {
        let mine = writes.filter { $0.channel == c }
        let reference = steps[c]
        expected += reference.count
        var seen: [UInt64: Int] = [:]
        for w in mine { seen[w.duty, default: 0] += 1 }
        twice += seen.values.filter { $0 > 1 }.map { $0 - 1 }.reduce(0, +)
        skipped += reference.keys.filter { seen[$0] == nil }.count
        unexpected += seen.keys.filter { reference[$0] == nil }.count
        // The fade's start on the engine's millisecond timeline: no write comes before its step's deadline, and the
        // earliest relative to its step is within a millisecond of it.
        let last = reference.max { $0.value < $1.value }!.key
        let file = readFile(root + "/sys/class/pwm/pwmchip0/pwm\(c)/duty_cycle").filter { !$0.isNewline }
        if mine.last?.duty != last || file != String(last) { wrongFinal += 1 }
        let known = mine.compactMap { w in reference[w.duty].map { (w.nanos, UInt64($0) * 20_000_000) } }
        guard let start = known.map({ $0.0 - $0.1 }).min() else { continue }
        let startMs = start / 1_000_000 * 1_000_000
        late += known.map { $0.0 - ($0.1 + startMs) }
        for (at, step) in known { ticks[step + startMs, default: []].append(at) }
    }
    late.sort()
    // Per tick of the engine (a deadline several channels share): how late its first write is (the engine's wake and
    // its own step) and how far its last write trails its first (the writes queued behind one another).
    var firsts: [UInt64] = [], spreads: [UInt64] = []
    for (deadline, times) in ticks where times.count > 1 {
        let first = times.min()!, last = times.max()!
        firsts.append(first >= deadline ? first - deadline : 0)
        spreads.append(last - first)
    }
    firsts.sort(); spreads.sort()
    func pctOf(_ xs: [UInt64], _ p: Double) -> UInt64 { xs.isEmpty ? 0 : xs[min(xs.count - 1, Int(Double(xs.count) * p))] }
    func ms(_ ns: UInt64) -> String { String(Double(ns / 10_000) / 100) + " ms" }
    func pct(_ p: Double) -> UInt64 { pctOf(late, p) }
    var average = [Double](repeating: 0, count: 3)
    getloadavg(&average, 3)
    print("fades under load: \(dimmers) PWM dimmers each fading 10 s (sysfs tree in \(memory)), \(loadDevices) other lights getting "
          + "\(Int(Double(loadSent) / loadSeconds)) requests/s (\(responses) answered of \(loadSent)); load average \(Double(Int(average[0] * 100)) / 100)")
    print("  duty writes: \(writes.count) of \(expected) the reference steps write (written twice: \(twice), skipped: \(skipped), "
          + "not a reference step's: \(unexpected))")
    print("  lateness behind the 20 ms grid: p50 \(ms(pct(0.5)))  p99 \(ms(pct(0.99)))  max \(ms(late.last ?? 0)) (goal p99 ≤ 2 ms)")
    print("  per tick shared by several channels (\(firsts.count)): first write late p50 \(ms(pctOf(firsts, 0.5)))  p99 \(ms(pctOf(firsts, 0.99))); "
          + "last write after the first p50 \(ms(pctOf(spreads, 0.5)))  p99 \(ms(pctOf(spreads, 0.99)))")
    print("  final duty exact on \(dimmers - wrongFinal) of \(dimmers) channels")
    // A dimmer request that failed says why (it would otherwise show only as steps skipped).
    for m in inbox.messages.withLock({ $0 }) where m.topic == "hearth/fades/responses" && contains(m.payload, "dim-") && !contains(m.payload, #""ok":true"#) {
        print("  failed: " + String(decoding: m.payload, as: UTF8.self))
        break
    }
    client.disconnect()
}

private func contains(_ bytes: [UInt8], _ text: String) -> Bool {
    let needle = Array(text.utf8)
    guard needle.count <= bytes.count else { return false }
    return (0...(bytes.count - needle.count)).contains { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
}
