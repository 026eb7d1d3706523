package import HearthEngine
package import HearthJSON

/// The requests a hub ran in the last minute, so that one delivered twice runs once.
///
/// QoS 1 is "at least once": a client whose PUBACK was lost (a lossy link, a reconnect before the
/// acknowledgement came back) publishes the request again with the DUP flag, and the broker passes both copies
/// on as two messages. For `toggle`, `step` or a relative move, running the copy is a second, wrong action. A
/// copy is recognised by everything a delivery carries: topic, payload bytes (which hold the client's
/// transaction), MQTT 5 response topic and correlation data. Only requests with a transaction are remembered:
/// without one a client cannot tell its answers apart either, and two identical anonymous requests are two
/// presses. The copy is not run: it gets the first one's response again (once that is known; while the first is
/// still on its device's lane the copy is dropped, the first one's response answers both).
///
/// Bounded in time (`window`, from the first arrival) and in size (`capacity`, oldest forgotten first; an entry is a
/// topic, a digest and the response), so a client that sends thousands of distinct requests costs at most
/// `capacity` entries.
package struct RecentRequests {
    /// A delivery, by its topic and a digest of the rest: a request may be large, and a thousand of them are
    /// remembered, so the bytes are not kept. The digest is SipHash with this process's random seed (`Hasher`), so
    /// no client can make two different requests collide on purpose; by chance, one in 2⁶⁴.
    package struct Key: Hashable, Sendable {
        package var topic: String
        package var digest: Int

        package init(topic: String, payload: [UInt8], responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
            self.topic = topic
            var hasher = Hasher()
            hasher.combine(payload)
            hasher.combine(responseTopic)
            hasher.combine(correlationData)
            digest = hasher.finalize()
        }
    }

    package enum Admission: Equatable, Sendable {
        /// Not seen within the window: run it.
        case run
        /// A copy of a request that is still running: drop it, the first one's response answers both.
        case running
        /// A copy of a request that was answered: send this response again, run nothing.
        case answered(JSON)
    }

    /// Long enough for a client's own retry after a reconnect (libmosquitto retries at once; a link that drops
    /// for longer ends the client's session anyway), short enough that a transaction id reused on purpose
    /// a minute later runs.
    package static let defaultWindow: Int64 = 60_000
    package static let defaultCapacity = 1024

    private struct Entry {
        var first: EngineInstant
        var response: JSON?
    }
    private var entries: [Key: Entry] = [:]
    /// Keys in arrival order with the arrival they stand for (a key forgotten and seen again is here twice; only
    /// the entry with the same arrival is dropped), `head` the oldest not yet dropped; compacted when half is spent.
    private var order: [(key: Key, first: EngineInstant)] = []
    private var head = 0
    package let window: Int64
    package let capacity: Int

    package init(window: Int64 = RecentRequests.defaultWindow, capacity: Int = RecentRequests.defaultCapacity) {
        self.window = window
        self.capacity = max(1, capacity)
    }

    package var count: Int { entries.count }

    /// Whether to run a request that arrived `now`; a `.run` answer remembers it.
    package mutating func admit(_ key: Key, now: EngineInstant) -> Admission {
        while head < order.count, now - order[head].first >= window { dropOldest() }
        if let entry = entries[key] {
            return entry.response.map { .answered($0) } ?? .running
        }
        entries[key] = Entry(first: now)
        order.append((key, now))
        while entries.count > capacity { dropOldest() }
        return .run
    }

    /// Records the response of a request `admit` said to run, for its copies.
    package mutating func answered(_ key: Key, _ response: JSON) {
        entries[key]?.response = response
    }

    /// Forgets a request that was refused (`busy`, or any failure: a refused request changes nothing), so that
    /// sending it again is a new attempt.
    package mutating func forget(_ key: Key) {
        entries[key] = nil
    }

    private mutating func dropOldest() {
        guard head < order.count else { return }
        let (key, first) = order[head]
        if entries[key]?.first == first { entries[key] = nil }
        head += 1
        if head > 64 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
