public import HearthMQTT
import Testing
import HearthSync

/// Collects values from handlers (any thread) and lets a test await one, with a generous timeout.
public final class Recorder<Element: Sendable>: Sendable {
    public init() {}
    private let items = Locked<[Element]>([])

    public func append(_ element: Element) {
        items.withLock { $0.append(element) }
    }

    public var all: [Element] { items.withLock { $0 } }

    public func removeAll() { items.withLock { $0.removeAll() } }

    /// The first recorded element matching `predicate`, waiting up to `timeout` for it; `nil` on timeout or when
    /// the test is cancelled (its time limit ran out).
    public func first(within timeout: Duration = .seconds(15),
               where predicate: @Sendable (Element) -> Bool) async -> Element? {
        var found: Element?
        _ = await poll(within: timeout) {
            found = items.withLock { $0.first(where: predicate) }
            return found != nil
        }
        return found
    }

    /// Waits until at least `count` elements match; false on timeout or cancellation.
    public func count(atLeast count: Int, within timeout: Duration = .seconds(15),
               where predicate: @Sendable (Element) -> Bool) async -> Bool {
        await poll(within: timeout) { items.withLock { $0.filter(predicate).count } >= count }
    }
}

/// A client with recorders wired to its handlers.
public struct Probe {
    public let client: MQTTClient
    public let messages = Recorder<MQTTMessage>()
    public let events = Recorder<MQTTConnectionEvent>()
    public let connects = Recorder<MQTTProtocolVersion>()

    public init(_ options: MQTTConnectOptions) throws {
        client = try MQTTClient(options: options)
        let messages = messages, events = events, connects = connects
        client.onMessage = { messages.append($0) }
        client.onConnectionEvent = { events.append($0) }
        client.onConnect = { connects.append($0) }
    }

    /// Waits for a message on `topic` (and matching `predicate`).
    public func message(on topic: String, where predicate: @escaping @Sendable (MQTTMessage) -> Bool = { _ in true })
        async -> MQTTMessage? {
        await messages.first { $0.topic == topic && predicate($0) }
    }

    /// Publishes a marker to `topic` and waits to receive it: afterwards every earlier SUBSCRIBE of this client is
    /// active on the broker (one connection is processed in order).
    public func barrier(_ topic: String) async throws -> Bool {
        let marker = Array("barrier-\(UInt64.random(in: 0...UInt64.max))".utf8)
        try client.publish(topic, payload: marker, qos: .atLeastOnce)
        return await message(on: topic) { $0.payload == marker } != nil
    }
}

extension TestBroker {
    public func options(clientID: String? = nil, _ configure: (inout MQTTConnectOptions) -> Void = { _ in })
        -> MQTTConnectOptions {
        var options = MQTTConnectOptions(host: host, port: port, clientID: clientID)
        // Quick retries keep the reconnection tests short; the policy itself is unit-tested.
        options.reconnectBackoff = MQTTBackoff(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
        configure(&options)
        return options
    }

    /// A probe connected to this broker.
    public func connectedProbe(clientID: String? = nil, _ configure: (inout MQTTConnectOptions) -> Void = { _ in })
        async throws -> Probe {
        let probe = try Probe(options(clientID: clientID, configure))
        try await probe.client.connect()
        return probe
    }
}

extension Array where Element == UInt8 {
    public init(_ text: String) { self = Array(text.utf8) }
}

/// Waits up to `timeout` for `condition` to hold; false on timeout, or at once when the task is cancelled (a test's
/// time limit ran out), so that a broken test fails instead of hanging.
public func eventually(within timeout: Duration = .seconds(15), _ condition: @Sendable () async -> Bool) async -> Bool {
    await poll(within: timeout, condition)
}

/// The one polling loop behind every wait of the test kit: checks `condition` every few milliseconds until it
/// holds, `timeout` has passed or the task is cancelled. For conditions that have no event to await (a file's
/// content, a child's exit, what a broker logged, a state that lives on an event loop); a test waits on a
/// condition, never on a bare sleep.
public func poll(within timeout: Duration, every interval: Duration = .milliseconds(5),
                 _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= deadline || Task.isCancelled { return false }
        try? await Task.sleep(for: interval)
    }
}
