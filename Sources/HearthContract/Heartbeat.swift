import HearthJSON

/// What a hub publishes on `<prefix>/<hub>/heartbeat` (`docs/mqtt-api.md`): that it is alive, and how often it says
/// so. A hub reached through a bridge (`route: remote`) is offline once it has not been heard from for
/// ``silenceFactor`` intervals, since a link cut between two brokers delivers no last will to the other side.
/// `{"interval":10}` is 15 bytes.
///
/// Published retained, so that a hub that subscribes learns at once that the peer sends heartbeats and how often
/// (a retained copy is not proof of life: only a live one is); an empty retained payload says it sends none.
public struct Heartbeat: Sendable, Hashable {
    /// Seconds between two heartbeats.
    public var interval: Int

    /// The intervals a hub sends and accepts, in seconds.
    public static let intervals = 1...3600
    /// A peer is silent after this many intervals without a heartbeat: one may be lost, or late by up to an interval,
    /// before it counts.
    public static let silenceFactor = 2
    /// The largest heartbeat read; a later version may say more than the interval.
    public static let maximumSize = 256

    public init(interval: Int) { self.interval = interval }

    /// How long after the last heartbeat a peer counts as silent, in milliseconds.
    public var silenceMilliseconds: Int64 { Int64(interval) * Int64(Self.silenceFactor) * 1000 }

    /// `{"interval":5}`.
    public var bytes: [UInt8] { JSON.object([("interval", .int(interval))]).bytes }

    /// Reads a heartbeat; the reason it is not one otherwise. Other members are ignored, so that a later version may
    /// say more.
    public static func parse(_ payload: [UInt8]) -> Result<Heartbeat, HeartbeatError> {
        guard payload.count <= maximumSize else {
            return .failure(HeartbeatError("\(payload.count) bytes, more than the \(maximumSize) a heartbeat may have"))
        }
        let json: JSON
        do throws(JSONParseError) { json = try JSON.parse(payload) } catch {
            return .failure(HeartbeatError("not JSON (\(error))"))
        }
        guard case .int(let interval)? = json["interval"] else {
            return .failure(HeartbeatError("not an object with an integer 'interval'"))
        }
        guard intervals.contains(interval) else {
            return .failure(HeartbeatError("interval \(interval) is out of range; allowed: "
                                           + "\(intervals.lowerBound)…\(intervals.upperBound) seconds"))
        }
        return .success(Heartbeat(interval: interval))
    }
}

/// Why a heartbeat's payload was not read.
public struct HeartbeatError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
