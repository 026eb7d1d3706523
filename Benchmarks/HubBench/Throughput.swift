import HearthMQTT
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension HubBench {
    /// The name of the option that turns this binary into the echo responder (`runEchoResponder`).
    static let echoResponderOption = "--echo-responder"

    /// Throughput and CPU per request under load: 500 devices, 4 connections with 64 requests in
    /// flight each, at QoS 0 and at QoS 1. The baseline is an echo responder driven exactly the same way: a
    /// libmosquitto client in a process of its own (this binary, `--echo-responder`) that answers each request with
    /// one document-sized reply, so that its CPU time can be read like the hub's. The hub answers each request with
    /// three messages (the device's document, the response on `responses` and on the request's response topic);
    /// the echo with one, which is the least any responder must do.
    ///
    /// Requests to a device run on the network thread when it has no hardware (these devices have none), so the
    /// load also exercises what docs/architecture.md, "Back-pressure", says about that path: nothing is lost or
    /// refused, the requests wait in the socket and the broker.
    ///
    /// `HUBBENCH_WRAP` (e.g. `valgrind --tool=callgrind`) runs this case's hub under a wrapper; with callgrind, its
    /// counters are zeroed before each load and dumped after (`callgrind_control`), so the profile holds the load only.
    static func throughput(binDir: String, work: String, requests: Int, devices deviceCount: Int = 500,
                           connections: Int = 4, inFlight: Int = 64) async throws {
        guard requests > 0 else { return }
        let port = freePort()
        let broker = startBroker(work: work, name: "throughput", port: port)
        defer { kill(broker, SIGTERM); var s: Int32 = 0; waitpid(broker, &s, 0) }
        usleep(300_000)

        write("name: bench-board\nsimulated: true\n", to: "\(work)/board.yaml")
        var list = ""
        for i in 0..<deviceCount { list += "  - {id: light-\(i), type: \(i % 2 == 0 ? "DimmableLight" : "OnOffLight")}\n" }
        write("hub:\n  id: tp\n  board: board.yaml\n  stateDirectory: state-tp\n  logLevel: warning\n"
              + "web:\n  enabled: false\nweb:\n  enabled: false\nmqtt:\n  host: 127.0.0.1\n  port: \(port)\ndevices:\n\(list)", to: "\(work)/tp.yaml")
        let wrapper = getenv("HUBBENCH_WRAP").map { String(cString: $0).split(separator: " ").map(String.init) } ?? []
        let command = wrapper + ["\(binDir)/hearthd", "run", "--config", "\(work)/tp.yaml"]
        // A wrapper named without a path is looked up in /usr/bin; the hub's own path is used as given.
        let hub = spawn(wrapper.isEmpty || command[0].hasPrefix("/") ? command[0] : "/usr/bin/" + command[0], Array(command.dropFirst()),
                        output: "\(work)/tp.log")
        defer { kill(hub, SIGTERM); var s: Int32 = 0; waitpid(hub, &s, 0) }
        let status = try Endpoint("bench-tp-status", port: port)
        try status.client.subscribe("hearth/tp/status")
        _ = try await status.client.connect()
        guard status.wait(timeoutNanos: wrapper.isEmpty ? 60_000_000_000 : 600_000_000_000, { $0.payload == Array("online".utf8) }) != nil else {
            fail("the throughput hub did not come online:\n" + readFile("\(work)/tp.log"))
        }
        status.client.disconnect()
        // The echo's reply is as long as the hub's average document.
        var toggled = [Int](repeating: 0, count: deviceCount)
        let before = try await documents(port: port, count: deviceCount)
        let replySize = before.values.reduce(0) { $0 + $1.count } / max(before.count, 1)

        let echo = spawn("/proc/self/exe", [echoResponderOption, String(port), String(replySize)], output: "\(work)/echo.log")
        defer { kill(echo, SIGTERM); var s: Int32 = 0; waitpid(echo, &s, 0) }

        print("throughput: \(deviceCount) devices, \(connections) connections × \(inFlight) requests in flight, \(requests) onOff toggles")
        print("  (baseline: an echo responder driven the same way, one \(replySize)-byte reply a request; the hub sends its document and two responses)")
        for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
            let echoRun = try await load(port: port, target: echo, prefix: "bench/echo", name: "echo", qos: qos,
                                         requests: requests, devices: deviceCount, connections: connections, inFlight: inFlight,
                                         check: { payload, _ in payload.count == replySize }, profile: false)
            let hubRun = try await load(port: port, target: hub, prefix: "hearth/tp/devices", name: "hub", qos: qos,
                                        requests: requests, devices: deviceCount, connections: connections, inFlight: inFlight,
                                        check: { contains($0, #""transaction":"\#($1)","device":"#) && contains($0, #""ok":true"#) },
                                        profile: !wrapper.isEmpty)
            for n in 0..<requests { toggled[n % deviceCount] += 1 }
            // Every device's retained document says what its toggles add up to.
            let after = try await documents(port: port, count: deviceCount)
            let wrongState = (0..<deviceCount).filter { i in
                after["light-\(i)"].map { !contains($0, #""onOff":\#(toggled[i] % 2 == 1)"#) } ?? true
            }.count
            print("  QoS \(qos.rawValue): echo (baseline) \(echoRun.rate) requests/s, CPU \(us(echoRun.cpuPerRequest)) a request; lost \(echoRun.lost), wrong \(echoRun.wrong)")
            print("         hub \(hubRun.rate) requests/s (\(ratio(UInt64(hubRun.rate), UInt64(echoRun.rate))) the echo's, goal ≥ 0.9× at QoS 0), "
                  + "CPU \(us(hubRun.cpuPerRequest)) a request (\(ratio(hubRun.cpuPerRequest, echoRun.cpuPerRequest)) the echo's, goal ≤ 1.3×); "
                  + "lost \(hubRun.lost), wrong \(hubRun.wrong + wrongState) (\(wrongState) devices in the wrong state)")
        }
    }

    struct LoadRun {
        var rate: Int
        var cpuPerRequest: UInt64
        var lost: Int
        var wrong: Int
    }

    /// Sends `requests` toggles round robin over the devices from `connections` clients, each keeping `inFlight`
    /// unanswered (a new request goes out from the client's callback as each answer arrives), and times them.
    static func load(port: Int, target: pid_t, prefix: String, name: String, qos: MQTTQoS, requests: Int, devices: Int,
                     connections: Int, inFlight: Int, check: @escaping @Sendable ([UInt8], Int) -> Bool,
                     profile: Bool) async throws -> LoadRun {
        let topics = (0..<devices).map { "\(prefix)/light-\($0)/set" }
        let clients = try (0..<connections).map { k in
            try LoadClient(id: "bench-load-\(name)-\(qos.rawValue)-\(k)", port: port, index: k, of: connections,
                           total: requests, topics: topics, qos: qos, check: check)
        }
        for c in clients { _ = try await c.client.connect() }
        // One request answered on each connection: the subscriptions are in place and the responder is up.
        for c in clients { try c.ping() }
        if profile { _ = system("callgrind_control -z \(target) > /dev/null") }
        let cpuBefore = cpuNanoseconds(target)
        let start = nanos()
        for c in clients { try c.begin(inFlight: inFlight) }
        var lost = 0
        for c in clients { lost += c.waitUntilDone() }
        let wall = nanos() - start
        let cpu = cpuNanoseconds(target) - cpuBefore
        if profile { _ = system("callgrind_control -d \(target) > /dev/null") }
        let wrong = clients.reduce(0) { $0 + $1.state.withLock { $0.wrong } }
        for c in clients { c.client.disconnect() }
        return LoadRun(rate: Int(UInt64(requests - lost) * 1_000_000_000 / max(wall, 1)), cpuPerRequest: cpu / UInt64(requests),
                       lost: lost, wrong: wrong)
    }

    /// The retained document of each of the hub's devices, by device id.
    static func documents(port: Int, count: Int) async throws -> [String: [UInt8]] {
        let probe = try Endpoint("bench-tp-documents-\(nanos())", port: port)
        try probe.client.subscribe("hearth/tp/devices/+")
        _ = try await probe.client.connect()
        defer { probe.client.disconnect() }
        var documents: [String: [UInt8]] = [:]
        while documents.count < count {
            guard let m = probe.wait({ _ in true }) else { fail("only \(documents.count) of \(count) documents are retained") }
            documents[String(m.topic.split(separator: "/").last!)] = m.payload
        }
        return documents
    }

    /// The echo responder (a process of its own, so that its CPU time is its own): answers every request on
    /// `bench/echo/<device>/set` with `size` bytes on the request's response topic, with its correlation data.
    static func runEchoResponder(port: Int, size: Int) async throws -> Never {
        let client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: "bench-echo-responder"))
        let reply = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        client.onMessage = { [client] m in
            guard let topic = m.responseTopic else { return }
            try? client.publish(topic, payload: reply, correlationData: m.correlationData)
        }
        try client.subscribe("bench/echo/+/set", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        _ = try await client.connect()
        while true { pause() }
    }
}

/// One load connection: its share of the requests (every `of`-th, from `index`), what has been answered, and
/// a semaphore that wakes the bench when all of it has.
final class LoadClient: Sendable {
    struct State {
        var next: Int
        var answered = 0
        var wrong = 0
        var seen: [Bool]
    }
    let client: MQTTClient
    let state: Mutex<State>
    let done = DispatchSemaphore(value: 0)
    let pong = DispatchSemaphore(value: 0)
    let share: Int
    let stride: Int
    let total: Int
    let topics: [String]
    let replies: String
    let qos: MQTTQoS

    init(id: String, port: Int, index: Int, of connections: Int, total: Int, topics: [String], qos: MQTTQoS,
         check: @escaping @Sendable ([UInt8], Int) -> Bool) throws {
        client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: port, clientID: id))
        share = total > index ? (total - index + connections - 1) / connections : 0
        stride = connections
        self.total = total
        self.topics = topics
        self.qos = qos
        replies = "bench/load/\(id)"
        state = Mutex(State(next: index, seen: [Bool](repeating: false, count: total)))
        client.onMessage = { [weak self] m in
            guard let self, let data = m.correlationData, data.count == 4 else { return }
            let n = Int(data[0]) | Int(data[1]) << 8 | Int(data[2]) << 16 | Int(data[3]) << 24
            if n == 0xFFFF_FFFF { pong.signal(); return }
            let good = check(m.payload, n)
            let (send, finished) = state.withLock { s -> (Int?, Bool) in
                if n >= total || s.seen[n] || !good { s.wrong += 1; return (nil, false) }
                s.seen[n] = true
                s.answered += 1
                guard s.next < total else { return (nil, s.answered == share) }
                defer { s.next += stride }
                return (s.next, false)
            }
            if let send { try? self.send(send) }
            if finished { done.signal() }
        }
        try client.subscribe(replies, options: MQTTSubscriptionOptions(qos: qos))
    }

    func send(_ n: Int) throws {
        let id = UInt32(truncatingIfNeeded: n)
        try client.publish(topics[n % topics.count], payload: Array(#"{"transaction":"\#(n)","trait":"onOff","command":"toggle"}"#.utf8),
                           qos: qos, responseTopic: replies,
                           correlationData: [UInt8(id & 0xff), UInt8(id >> 8 & 0xff), UInt8(id >> 16 & 0xff), UInt8(id >> 24)])
    }

    /// A request with a transaction no toggle uses and a device that does not exist, answered (an error from the
    /// hub, a reply from the echo) once both ends are ready; retried until it is.
    func ping() throws {
        for _ in 0..<100 {
            try client.publish(String(topics[0].dropLast("light-0/set".count)) + "no-such-device/set",
                               payload: Array(#"{"transaction":"ping","trait":"onOff","command":"toggle"}"#.utf8),
                               qos: qos, responseTopic: replies, correlationData: [0xff, 0xff, 0xff, 0xff])
            if pong.wait(timeout: .now() + .milliseconds(200)) == .success { return }
        }
        fail("\(replies): nobody answers")
    }

    func begin(inFlight: Int) throws {
        let first = state.withLock { s -> [Int] in
            var ns: [Int] = []
            while ns.count < inFlight && s.next < total { ns.append(s.next); s.next += stride }
            return ns
        }
        for n in first { try send(n) }
    }

    /// Waits until every request of this connection is answered, or nothing has been for 10 s; returns how many
    /// were not.
    func waitUntilDone() -> Int {
        var last = -1
        while done.wait(timeout: .now() + .seconds(10)) == .timedOut {
            let answered = state.withLock { $0.answered }
            if answered == last { return share - answered }
            last = answered
        }
        return 0
    }
}
