// The hub's recent log lines, for the web page's log view: a bounded ring in memory that the daemon's logger feeds
// (`RingLogHandler`, beside the console's handler), numbered so a reader can ask for what came after the last line it
// has. Secrets are taken out as a line enters the ring — the values `secrets.yaml` holds, the broker's password, the
// Matter pairing codes, the web page's setup code — so no reader of the ring ever sees one.
import HearthSync
public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One line of the log, as the ring holds it (its secrets already replaced).
public struct LogLine: Sendable, Equatable {
    /// 1, 2, 3 … in the order the lines were logged; never reused.
    public var sequence: Int
    /// UTC, `2026-11-27T10:00:00.123Z`.
    public var time: String
    public var level: Logger.Level
    /// The message, then the metadata as `key=value`.
    public var text: String
}

public final class LogRing: Sendable {
    /// Lines kept by default: a few hours of a quiet hub at `info`, a few minutes at `debug`.
    public static let defaultCapacity = 1000
    /// The longest line kept, in UTF-8 bytes; a longer one is cut and ends in `…`.
    public static let maximumLineLength = 2000
    /// What a secret is replaced with.
    public static let redacted = "‹secret›"
    /// A secret shorter than this is not looked for (one or two characters would blank half of every line).
    static let shortestSecret = 4

    public let capacity: Int
    private let now: @Sendable () -> String

    private struct State {
        var lines: [LogLine] = []
        /// Where the oldest line is once the ring is full.
        var start = 0
        var next = 1
        var secrets: [String] = []
        var observers: [Int: @Sendable () -> Void] = [:]
        var nextObserver = 0
    }
    private let state = Locked(State())

    /// - Parameter now: the time a line is stamped with (tests pass their own).
    public init(capacity: Int = LogRing.defaultCapacity, now: @escaping @Sendable () -> String = LogRing.utcNow) {
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// Adds values to take out of every line from now on (lines already in the ring have them taken out too).
    public func redact(_ secrets: [String]) {
        let fresh = secrets.filter { $0.utf8.count >= Self.shortestSecret }
        guard !fresh.isEmpty else { return }
        state.withLock { s in
            // Longest first, so a secret that contains another is replaced whole.
            s.secrets = Array(Set(s.secrets + fresh)).sorted { $0.utf8.count > $1.utf8.count }
            for i in s.lines.indices { s.lines[i].text = Self.redacting(s.lines[i].text, s.secrets) }
        }
    }

    /// Adds a line (the oldest goes once `capacity` are held) and tells the observers.
    public func append(level: Logger.Level, text: String) {
        let time = now()
        var cut = text
        if cut.utf8.count > Self.maximumLineLength {
            cut = String(decoding: cut.utf8.prefix(Self.maximumLineLength), as: UTF8.self) + "…"
        }
        let observers = state.withLock { s -> [@Sendable () -> Void] in
            let line = LogLine(sequence: s.next, time: time, level: level, text: Self.redacting(cut, s.secrets))
            s.next += 1
            if s.lines.count < capacity {
                s.lines.append(line)
            } else {
                s.lines[s.start] = line
                s.start = (s.start + 1) % capacity
            }
            return Array(s.observers.values)
        }
        for o in observers { o() }
    }

    /// The lines after `sequence` at `level` or more severe, oldest first, at most `limit` (the newest of them).
    public func lines(after sequence: Int = 0, atLeast level: Logger.Level = .trace, limit: Int = .max) -> [LogLine] {
        state.withLock { s in
            let ordered = s.lines[s.start...] + s.lines[..<s.start]
            let wanted = ordered.filter { $0.sequence > sequence && $0.level >= level }
            return Array(wanted.suffix(limit))
        }
    }

    /// The sequence number of the newest line, 0 before the first.
    public var newest: Int { state.withLock { $0.next - 1 } }

    /// Calls `changed` (on the logging thread, outside the ring's lock) after each line; it must not block or log.
    public func observe(_ changed: @escaping @Sendable () -> Void) -> Int {
        state.withLock { s in
            s.nextObserver += 1
            s.observers[s.nextObserver] = changed
            return s.nextObserver
        }
    }

    public func removeObserver(_ id: Int) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    static func redacting(_ text: String, _ secrets: [String]) -> String {
        var out = text
        for secret in secrets where out.contains(secret) { out = out.replacing(secret, with: redacted) }
        return out
    }

    /// The wall clock, as the line's stamp.
    @Sendable public static func utcNow() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var t = tm()
        gmtime_r(&seconds, &t)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let ms = Int(now.tv_nsec / 1_000_000)
        let millis = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(t.tm_year + 1900)-\(two(t.tm_mon + 1))-\(two(t.tm_mday))T\(two(t.tm_hour)):\(two(t.tm_min)):"
            + "\(two(t.tm_sec)).\(millis)Z"
    }
}

/// A log handler that feeds a `LogRing`: the label, the message and the metadata as one line, at the handler's level.
public struct RingLogHandler: LogHandler {
    public let ring: LogRing
    public let label: String
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level

    public init(ring: LogRing, label: String, level: Logger.Level) {
        self.ring = ring
        self.label = label
        logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let m = event.metadata { all.merge(m) { $1 } }
        let tail = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: " ")
        ring.append(level: event.level, text: "\(event.message)\(tail)")
    }
}
