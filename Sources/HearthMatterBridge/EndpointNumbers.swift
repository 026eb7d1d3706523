// The bridge's endpoint numbers, keyed by device id and kept in the node's storage. A controller remembers a bridged
// device by its endpoint number (its name, room and automations hang on it), so a number never changes across
// restarts or configuration changes, a device removed and added again under the same id gets its old number back, and
// no number is ever given to another device: entries are never forgotten.

public import HearthMatter
import HearthSync

/// Endpoint numbers by key (`device` for a device's bridged node, `device/Type` for a further type of it).
public final class EndpointNumbers: Sendable {
    /// Where the table is kept.
    public static let storageKey = StorageKey(rawValue: "bridge-endpoints")
    /// The first number a bridged device gets: 0 is the root node, 1 the aggregator.
    public static let first: EndpointID = 2
    /// The aggregator's endpoint.
    public static let aggregator: EndpointID = 1

    private let storage: any NodeStorage
    private let table: Locked<[String: EndpointID]>

    /// Reads the table; a table that cannot be read is an error (numbers must not be handed out again).
    public init(storage: any NodeStorage) throws(StorageError) {
        self.storage = storage
        var table: [String: EndpointID] = [:]
        if let bytes = try storage.load(Self.storageKey) {
            let entries: [TLVElement]
            do {
                entries = try TLVElement(decoding: bytes).array()
            } catch {
                throw StorageError(key: Self.storageKey, "the endpoint table is not readable: \(error)")
            }
            for entry in entries {
                guard let key = entry[context: 0]?.stringValue, let number = entry[context: 1]?.unsignedValue,
                      number >= UInt64(Self.first), number < 0xFFFF else {
                    throw StorageError(key: Self.storageKey, "the endpoint table has an invalid entry: \(entry)")
                }
                table[key] = EndpointID(number)
            }
        }
        self.table = Locked(table)
    }

    /// The numbers of `keys`, giving new ones (after every number ever given) to keys without one and storing the
    /// table before they are used. Keys keep their order's numbers when several are new.
    public func numbers(for keys: [String]) throws(StorageError) -> [String: EndpointID] {
        try table.withLock { table throws(StorageError) in
            var next = (table.values.max() ?? (Self.first - 1)) + 1
            var updated = table
            for key in keys where updated[key] == nil {
                guard next < 0xFFFF else {
                    throw StorageError(key: Self.storageKey, "no endpoint number is left for \(key)")
                }
                updated[key] = next
                next += 1
            }
            if updated != table {
                try storage.store(Self.storageKey, Self.encoded(updated))
                table = updated
            }
            var out: [String: EndpointID] = [:]
            for key in keys { out[key] = updated[key] }
            return out
        }
    }

    /// Every key and number, for tests and `hearthd matter endpoints`.
    public var all: [String: EndpointID] { table.withLock { $0 } }

    private static func encoded(_ table: [String: EndpointID]) -> [UInt8] {
        TLVElement(.array(table.sorted { $0.value < $1.value }.map { key, number in
            TLVElement(.structure([TLVElement(context: 0, .utf8(key)), TLVElement(context: 1, .uint(number))]))
        })).encoded()
    }
}
