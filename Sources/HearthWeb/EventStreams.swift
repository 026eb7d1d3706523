// The live streams of server-sent events (`GET /api/events`). Each stream starts with a snapshot (the hub's status,
// the whole home, then every device's document) and then carries changes, coalesced per device: a device that
// changed is marked, and its document is written from the newest state when the stream can take more, so a slow
// browser gets the latest state, never a backlog. What one stream holds is bounded by the number of devices (a set
// of marks) and NIO's write buffer (written only while the channel is writable); a stream that stays unwritable for
// `stallLimit`, or whose socket fails, is dropped. The engine's observer is registered only while a stream is open,
// and each stream's timer (link state and a keep-alive comment) exists only while it does: with no browser the
// hub's idle cost is unchanged. An admin's stream also carries the hub's new log lines (`log`), read from the log
// ring after the last one it sent, so what it holds for them is one number; the ring's observer is registered only
// while such a stream is open.
import HearthEngine
import HearthHub
import HearthJSON
import HearthSync
import NIOCore

final class EventStreams: Sendable {
    /// At most this many streams at once; more are refused with `busy` (each browser tab holds one).
    static let maximum = 16
    /// A keep-alive comment this often: proxies keep the stream, and a half-open client fails a write and is dropped.
    static let keepAliveTicks = 15
    /// A stream that could take nothing for this many ticks (seconds) is dropped.
    static let stallLimit = 60
    /// Device documents written per turn of the event loop before yielding to other connections.
    static let documentsPerTurn = 64

    let api: WebAPI
    private let state = Locked(State())

    private struct State {
        var streams: [ObjectIdentifier: Stream] = [:]
        var observer: Int?
        var logObserver: Int?
    }

    /// One open stream: what it still has to send.
    private struct Stream {
        let channel: any Channel
        var devices: [String] = []
        var marked: Set<String> = []
        var home = true
        var status = true
        var ready = false
        var scheduled = false
        var lastStatus: [UInt8] = []
        var stalledTicks = 0
        var ticks = 0
        /// An admin's stream: the log lines after `logAfter` are still to send when `logPending`.
        var logs = false
        var logAfter = 0
        var logPending = false
    }

    init(api: WebAPI) { self.api = api }

    var count: Int { state.withLock { $0.streams.count } }

    /// Adds a stream on `channel` (whose response head is written); false when `maximum` are open.
    func open(_ channel: any Channel, admin: Bool = false) -> Bool {
        let ids = api.mqtt.home.deviceIDs
        let key = ObjectIdentifier(channel)
        let ring = admin ? api.admin?.administration.logs : nil
        let (admitted, observe) = state.withLock { s -> (Bool, Bool) in
            guard s.streams.count < Self.maximum else { return (false, false) }
            var stream = Stream(channel: channel)
            stream.devices = ids
            stream.marked = Set(ids)
            if let ring {
                stream.logs = true
                stream.logAfter = ring.newest  // the page reads what came before with GET /api/admin/logs
            }
            s.streams[key] = stream
            return (true, s.observer == nil)
        }
        guard admitted else { return false }
        if let ring { observeLogs(ring) }
        if observe {
            let id = api.mqtt.home.observe { [weak self] events in self?.changed(events) }
            let stale = state.withLock { s -> Int? in
                if s.observer == nil && !s.streams.isEmpty { s.observer = id; return nil }
                return id
            }
            if let stale { api.mqtt.home.removeObserver(stale) }
        }
        channel.closeFuture.whenComplete { [self] _ in close(key) }
        schedule(key)
        tick(key)
        return true
    }

    private func close(_ key: ObjectIdentifier) {
        let (observer, logObserver) = state.withLock { s -> (Int?, Int?) in
            s.streams.removeValue(forKey: key)
            var logObserver: Int?
            if !s.streams.values.contains(where: \.logs) {
                logObserver = s.logObserver
                s.logObserver = nil
            }
            guard s.streams.isEmpty, let o = s.observer else { return (nil, logObserver) }
            s.observer = nil
            return (o, logObserver)
        }
        if let observer { api.mqtt.home.removeObserver(observer) }
        if let logObserver { api.admin?.administration.logs.removeObserver(logObserver) }
    }

    /// Registers the ring's observer for the admins' streams, once.
    private func observeLogs(_ ring: LogRing) {
        guard state.withLock({ $0.logObserver == nil }) else { return }
        let id = ring.observe { [weak self] in self?.logged() }
        let stale = state.withLock { s -> Int? in
            if s.logObserver == nil && s.streams.values.contains(where: \.logs) { s.logObserver = id; return nil }
            return id
        }
        if let stale { ring.removeObserver(stale) }
    }

    /// A new log line (on whichever thread logged it): mark the admins' streams and wake each once.
    private func logged() {
        let wake = state.withLock { s -> [ObjectIdentifier] in
            var wake: [ObjectIdentifier] = []
            for (key, var stream) in s.streams where stream.logs {
                stream.logPending = true
                if !stream.scheduled {
                    stream.scheduled = true
                    wake.append(key)
                }
                s.streams[key] = stream
            }
            return wake
        }
        for key in wake { schedule(key, already: true) }
    }

    /// The engine's changes (on whichever thread made them): mark, and wake each stream's loop once.
    private func changed(_ events: [HomeEvent]) {
        var homeChanged = false
        for e in events {
            if case .metadata = e.change { homeChanged = true }
            if case .connectivity = e.change { homeChanged = true }
        }
        let wake = state.withLock { s -> [ObjectIdentifier] in
            var wake: [ObjectIdentifier] = []
            for (key, var stream) in s.streams {
                for e in events where stream.marked.insert(e.deviceID).inserted { stream.devices.append(e.deviceID) }
                if homeChanged { stream.home = true }
                if !stream.scheduled {
                    stream.scheduled = true
                    wake.append(key)
                }
                s.streams[key] = stream
            }
            return wake
        }
        for key in wake { schedule(key, already: true) }
    }

    /// Runs `flush` on the stream's event loop.
    private func schedule(_ key: ObjectIdentifier, already: Bool = false) {
        guard let channel = state.withLock({ s -> (any Channel)? in
            guard s.streams[key] != nil else { return nil }
            if !already { s.streams[key]!.scheduled = true }
            return s.streams[key]!.channel
        }) else { return }
        channel.eventLoop.execute { [self] in flush(key) }
    }

    /// Writes what is marked while the channel takes it (on its event loop).
    func flush(_ key: ObjectIdentifier) {
        guard let channel = state.withLock({ $0.streams[key]?.channel }) else { return }
        guard channel.isWritable else {
            state.withLock { $0.streams[key]?.scheduled = false }  // writabilityChanged schedules again
            return
        }
        // What to write now, taken under the lock; the documents are rendered after it, from the newest state.
        let (sendStatus, sendHome, ids, ready, logAfter) = state.withLock {
            s -> (Bool, Bool, [String], Bool, Int?) in
            guard var stream = s.streams[key] else { return (false, false, [], false, nil) }
            let logAfter = stream.logPending ? stream.logAfter : nil
            stream.logPending = false
            let status = stream.status, home = stream.home
            stream.status = false
            stream.home = false
            let n = min(Self.documentsPerTurn, stream.devices.count)
            let ids = Array(stream.devices.prefix(n))
            stream.devices.removeFirst(n)
            for id in ids { stream.marked.remove(id) }
            let ready = !stream.ready && stream.devices.isEmpty
            if ready { stream.ready = true }
            s.streams[key] = stream
            return (status, home, ids, ready, logAfter)
        }
        var out: [UInt8] = []
        if sendStatus {
            let status = api.status(nil).bytes
            state.withLock { $0.streams[key]?.lastStatus = status }
            Self.event("status", status, to: &out)
        }
        if sendHome { Self.event("home", api.mqtt.homeView(), to: &out) }
        for id in ids { if let doc = api.mqtt.document(of: id) { Self.event("device", doc, to: &out) } }
        if ready { Self.event("ready", Array("{}".utf8), to: &out) }
        if let logAfter, let ring = api.admin?.administration.logs {
            // A stream that fell further behind gets the newest lines, as it gets the newest state of a device.
            let lines = ring.lines(after: logAfter, limit: Self.documentsPerTurn)
            for line in lines { Self.event("log", WebAdmin.line(line).bytes, to: &out) }
            if let last = lines.last { state.withLock { $0.streams[key]?.logAfter = last.sequence } }
        }
        if !out.isEmpty {
            channel.writeAndFlush(HTTPPart.body(out), promise: nil)
        }
        let more = state.withLock { s -> Bool in
            guard let stream = s.streams[key] else { return false }
            let more = !stream.devices.isEmpty || stream.home || stream.status || stream.logPending
            s.streams[key]!.scheduled = more
            return more
        }
        if more { channel.eventLoop.execute { [self] in flush(key) } }
    }

    /// Once a second while the stream is open: the broker link and the peers (`status` when they changed), a keep-alive
    /// comment every `keepAliveTicks`, and the drop of a stream stalled for `stallLimit`.
    private func tick(_ key: ObjectIdentifier) {
        guard let channel = state.withLock({ $0.streams[key]?.channel }) else { return }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { [self] in
            let status = api.status(nil).bytes
            let (writable, drop, ping, wake) = state.withLock { s -> (Bool, Bool, Bool, Bool) in
                guard var stream = s.streams[key] else { return (false, false, false, false) }
                stream.ticks += 1
                stream.stalledTicks = channel.isWritable ? 0 : stream.stalledTicks + 1
                var wake = false
                if status != stream.lastStatus && !stream.status {
                    // The broker link or a peer changed: the peers' devices' connectivity in the home changed with it.
                    stream.status = true
                    stream.home = true
                    if !stream.scheduled { stream.scheduled = true; wake = true }
                }
                s.streams[key] = stream
                return (
                    channel.isWritable, stream.stalledTicks >= Self.stallLimit, stream.ticks % Self.keepAliveTicks == 0,
                    wake
                )
            }
            if drop {
                channel.close(promise: nil)
                return
            }
            guard channel.isActive else { return }
            if ping && writable { channel.writeAndFlush(HTTPPart.body(Array(": keep-alive\n\n".utf8)), promise: nil) }
            if wake { flush(key) }
            tick(key)
        }
    }

    /// The channel can take more again (`channelWritabilityChanged`).
    func writable(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let wake = state.withLock { s -> Bool in
            guard var stream = s.streams[key], !stream.scheduled,
                  !stream.devices.isEmpty || stream.home || stream.status || stream.logPending else { return false }
            stream.scheduled = true
            s.streams[key] = stream
            return true
        }
        if wake { flush(key) }
    }

    static func event(_ name: String, _ data: [UInt8], to out: inout [UInt8]) {
        out += Array("event: \(name)\ndata: ".utf8)
        out += data  // JSON as written by the hub has no raw newline
        out += [10, 10]
    }
}
