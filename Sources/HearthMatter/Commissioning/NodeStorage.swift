// Where a node keeps what must survive a restart: fabrics with their keys, the ACL, NodeLabel and Location, counters,
// the attestation key and certificate. A key-value store of byte strings (each value Matter TLV written by its owner),
// so that the hub can put it in its own atomic state store; an in-memory one and a file one serve tests and tools.

import HearthSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key of the node's storage.
public struct StorageKey: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The committed fabric table (fabrics, their certificates, keys and IPKs) and the ACL, written together.
    public static let fabrics = StorageKey(rawValue: "matter-fabrics")
    /// NodeLabel, Location and RegulatoryConfig: what an administrator writes on BasicInformation and commissioning.
    public static let nodeSettings = StorageKey(rawValue: "matter-node-settings")
    /// RebootCount and the like.
    public static let counters = StorageKey(rawValue: "matter-counters")
    /// The first event number not yet reserved: events are numbered below it until the next block is reserved.
    public static let eventNumbers = StorageKey(rawValue: "matter-event-numbers")
    /// The device attestation key and certificate made at first start.
    public static let attestation = StorageKey(rawValue: "matter-attestation")

    public var description: String { rawValue }
}

/// A storage failure: the node cannot keep what it must, so the action that needed it fails.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var key: StorageKey
    public var message: String

    public init(key: StorageKey, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "storage of \(key): \(message)" }
}

/// The node's persistent store. Each `store` is atomic: after a power loss a key holds its old or its new bytes.
public protocol NodeStorage: Sendable {
    func load(_ key: StorageKey) throws(StorageError) -> [UInt8]?
    func store(_ key: StorageKey, _ bytes: [UInt8]) throws(StorageError)
    func remove(_ key: StorageKey) throws(StorageError)
}

/// Storage in memory, for tests; it can be told to fail, to test what a node does then.
public final class InMemoryNodeStorage: NodeStorage {
    private let state = Locked<(values: [StorageKey: [UInt8]], failing: Bool, writes: Int)>(([:], false, 0))

    public init() {}

    /// Whether the next operations fail.
    public var isFailing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    /// How many stores and removes succeeded.
    public var writeCount: Int { state.withLock { $0.writes } }

    public func load(_ key: StorageKey) throws(StorageError) -> [UInt8]? {
        let (value, failing) = state.withLock { ($0.values[key], $0.failing) }
        if failing { throw StorageError(key: key, "the storage is failing (test)") }
        return value
    }

    public func store(_ key: StorageKey, _ bytes: [UInt8]) throws(StorageError) {
        let failing = state.withLock { state in
            if state.failing { return true }
            state.values[key] = bytes
            state.writes += 1
            return false
        }
        if failing { throw StorageError(key: key, "the storage is failing (test)") }
    }

    public func remove(_ key: StorageKey) throws(StorageError) {
        let failing = state.withLock { state in
            if state.failing { return true }
            state.values[key] = nil
            state.writes += 1
            return false
        }
        if failing { throw StorageError(key: key, "the storage is failing (test)") }
    }
}

/// Storage as one file per key in a directory (mode 0600), each written to a temporary file, flushed and renamed.
public struct FileNodeStorage: NodeStorage {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    private func path(_ key: StorageKey) -> String { directory + "/" + key.rawValue }

    public func load(_ key: StorageKey) throws(StorageError) -> [UInt8]? {
        let fd = open(path(key), O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StorageError(key: key, "cannot open \(path(key)): errno \(errno)")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StorageError(key: key, "cannot read \(path(key)): errno \(errno)")
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    public func store(_ key: StorageKey, _ bytes: [UInt8]) throws(StorageError) {
        let target = path(key), temporary = target + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw StorageError(key: key, "cannot create \(temporary): errno \(errno)") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let error = errno
                close(fd)
                unlink(temporary)
                throw StorageError(key: key, "cannot write \(temporary): errno \(error)")
            }
            written += count
        }
        if fsync(fd) != 0 {
            let error = errno
            close(fd)
            unlink(temporary)
            throw StorageError(key: key, "cannot flush \(temporary): errno \(error)")
        }
        close(fd)
        if rename(temporary, target) != 0 {
            let error = errno
            unlink(temporary)
            throw StorageError(key: key, "cannot rename \(temporary): errno \(error)")
        }
        // The rename itself reaches the disk with the directory.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }

    public func remove(_ key: StorageKey) throws(StorageError) {
        if unlink(path(key)) != 0 && errno != ENOENT {
            throw StorageError(key: key, "cannot remove \(path(key)): errno \(errno)")
        }
    }
}
