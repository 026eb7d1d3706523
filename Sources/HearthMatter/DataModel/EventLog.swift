// The node's event log: the events its clusters emitted, newest kept, in one bounded buffer per priority (so that a
// chatty debug event never pushes out a critical one), and the event numbers, which never go back across restarts:
// the node reserves them in blocks in its storage (the next number plus a block is written before the block is used;
// a restart starts from what was written), so a controller's EventMin filter stays meaningful.

import HearthSync

/// One event as the log keeps it.
public struct EventRecord: Sendable, Equatable {
    public var number: UInt64
    public var path: ConcreteEventPath
    public var priority: EventPriority
    /// Milliseconds on the node's monotonic clock (since boot): the event's SystemTimestamp.
    public var systemTimestamp: UInt64
    /// The event's fields structure.
    public var data: TLVElement

    public var dataIB: EventDataIB {
        EventDataIB(
            path: path, eventNumber: number, priority: priority, systemTimestamp: systemTimestamp, data: data.value)
    }
}

/// How many events of each priority the log keeps (the most recent).
public struct EventLogCapacity: Sendable, Equatable {
    public var debug: Int
    public var info: Int
    public var critical: Int

    public init(debug: Int = 64, info: Int = 128, critical: Int = 64) {
        self.debug = debug
        self.info = info
        self.critical = critical
    }

    func of(_ priority: EventPriority) -> Int {
        switch priority {
        case .debug: debug
        case .info: info
        case .critical: critical
        }
    }
}

/// The events kept, by priority; each buffer drops its oldest event when full.
struct EventLog {
    let capacity: EventLogCapacity
    private var buffers: [EventPriority: [EventRecord]] = [:]

    init(capacity: EventLogCapacity) { self.capacity = capacity }

    mutating func append(_ record: EventRecord) {
        var buffer = buffers[record.priority] ?? []
        buffer.append(record)
        let limit = max(capacity.of(record.priority), 0)
        if buffer.count > limit { buffer.removeFirst(buffer.count - limit) }
        buffers[record.priority] = buffer
    }

    /// The events numbered `minimum` or above, in number order.
    func events(from minimum: UInt64) -> [EventRecord] {
        buffers.values.flatMap { $0.filter { $0.number >= minimum } }.sorted { $0.number < $1.number }
    }
}

/// Hands out event numbers that never repeat across restarts, reserving them in blocks in the node's storage.
public final class EventNumberSource: Sendable {
    /// How many numbers one write to storage reserves.
    public static let blockSize: UInt64 = 1000

    private let storage: (any NodeStorage)?
    private let state: Locked<(next: UInt64, reservedUntil: UInt64)>

    /// Numbers start at what the storage holds (0 on a node that never stored one) and the first block is reserved
    /// at once; a node that cannot store it does not start.
    public init(storage: any NodeStorage) throws(StorageError) {
        let stored = try storage.load(.eventNumbers)
        let first = try stored.map { bytes throws(StorageError) -> UInt64 in
            guard let value = (try? TLVElement(decoding: bytes))?.unsignedValue else {
                throw StorageError(key: .eventNumbers, "the stored next event number is not an unsigned integer")
            }
            return value
        } ?? 0
        let reserved = first &+ Self.blockSize
        try storage.store(.eventNumbers, TLVElement(.uint(reserved)).encoded())
        self.storage = storage
        state = Locked((first, reserved))
    }

    /// Numbers from `first`, kept nowhere (tests, a node without storage).
    public init(first: UInt64 = 0) {
        storage = nil
        state = Locked((first, UInt64.max))
    }

    /// The number the next event gets.
    public var next: UInt64 { state.withLock { $0.next } }

    /// Takes the next number; reserves the next block first when this one is used up. If that write fails the number
    /// is still given (an event is never lost for it), and the write is tried again at the next event.
    func take() -> UInt64 {
        state.withLock { state in
            let number = state.next
            state.next &+= 1
            if state.next >= state.reservedUntil, let storage {
                let reserved = state.next &+ Self.blockSize
                if (try? storage.store(.eventNumbers, TLVElement(.uint(reserved)).encoded())) != nil {
                    state.reservedUntil = reserved
                }
            }
            return number
        }
    }
}
