/// A device as a client sees it at one moment (the Home APIs' `HomeDevice`): a value, never a live object. Ask the
/// home again (``Home/device(id:)``, ``DeviceTypes/subscribe(_:)``) for later states.
public struct HomeDevice: Sendable, Hashable, Identifiable {
    public let id: String
    public let name: String
    public let structureID: String?
    public let roomID: String?
    public let isMatterDevice: Bool
    /// Aggregated from its types (and they from their traits).
    public let sourceConnectivity: SourceConnectivity
    /// The device types (like Matter endpoints); exactly one is primary.
    public let types: DeviceTypes
    /// The hub that owns the device (publishes its document).
    public let hub: String
    /// The device's document, with connectivity as this client sees it (docs/mqtt-api.md).
    public let json: JSON
    let home: Home

    init(json: JSON, hub: String, home: Home) {
        let id = json["id"]?.stringValue ?? ""
        self.id = id
        name = json["name"]?.stringValue ?? ""
        structureID = json["structureId"]?.stringValue
        roomID = json["roomId"]?.stringValue
        isMatterDevice = json["isMatterDevice"]?.boolValue ?? false
        sourceConnectivity = SourceConnectivity(json: json["sourceConnectivity"])
        types = DeviceTypes(
            all: json["types"]?.arrayValue.map {
                DynamicDeviceType(
                    json: $0, route: Route(home: home, hub: hub, device: id, type: $0["type"]?.stringValue ?? ""))
            } ?? [], home: home, hub: hub, device: id)
        self.hub = hub
        self.json = json
        self.home = home
    }

    /// Devices of several hubs may share an id; this tells them apart.
    var key: String { "\(hub)/\(id)" }

    public static func == (a: HomeDevice, b: HomeDevice) -> Bool { a.hub == b.hub && a.json == b.json }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hub)
        hasher.combine(id)
    }

    /// Renames the device and returns it as updated (this value is unchanged). The hub keeps at most 60 Unicode code
    /// points and cuts the rest without an error.
    public func setName(_ name: String) async throws -> HomeDevice {
        try await change("setName", .string(name)) { $0.replacing("name", with: .string(name)) }
    }

    /// Puts the device in a room (nil takes it out) and returns it as updated.
    public func setRoom(_ roomID: String?) async throws -> HomeDevice {
        try await change("setRoom", roomID.map(JSON.string) ?? .null) {
            $0.replacing("roomId", with: roomID.map(JSON.string) ?? .null)
        }
    }

    /// Puts the device in a structure (nil takes it out) and returns it as updated.
    public func setStructure(_ structureID: String?) async throws -> HomeDevice {
        try await change("setStructure", structureID.map(JSON.string) ?? .null) {
            $0.replacing("structureId", with: structureID.map(JSON.string) ?? .null)
        }
    }

    /// Asks the hub to read the device's hardware now and republish it; returns the device as it then is.
    public func refresh() async throws -> HomeDevice {
        try await change("get", .bool(true)) { $0 }
    }

    private func change(_ key: String, _ value: JSON, expected: (JSON) -> JSON) async throws(HomeError) -> HomeDevice {
        let answer = try await home.perform([(key, value)], device: id, owner: hub, .device)
        if let current = home.current(id, hub: hub) { return current }
        // Not in the home any more (or not yet republished): this value with the change as the hub answered it.
        var json = expected(json)
        if key == "setName", let stored = answer.result?["name"] { json = json.replacing("name", with: stored) }
        return HomeDevice(json: json, hub: hub, home: home)
    }
}

/// Where a device type or trait lives, for the requests sent to it.
struct Route: Sendable {
    let home: Home
    let hub: String
    let device: String
    let type: String
}

/// A device's types (`device.types`): look one up by its Swift type, or go through all of them.
public struct DeviceTypes: Sendable, Hashable, RandomAccessCollection {
    /// Every type of the device, untyped, in the hub's order.
    public let all: [DynamicDeviceType]
    let home: Home
    let hub: String
    let device: String

    public var startIndex: Int { all.startIndex }
    public var endIndex: Int { all.endIndex }
    public subscript(position: Int) -> DynamicDeviceType { all[position] }

    public static func == (a: DeviceTypes, b: DeviceTypes) -> Bool {
        a.hub == b.hub && a.device == b.device && a.all == b.all
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(all) }

    /// Whether the device has this type.
    public func contains<T: DeviceType>(_ type: T.Type) -> Bool { all.contains { $0.name == T.identifier } }

    /// The type from this snapshot (the primary one when the device has it twice), or nil.
    public subscript<T: DeviceType>(_ type: T.Type) -> T? {
        let matches = all.filter { $0.name == T.identifier }
        return (matches.first { $0.metadata.isPrimaryType } ?? matches.first).map(T.init)
    }

    /// The type as it is now (read from the home, not from this snapshot), or nil when the device does not have it.
    public func get<T: DeviceType>(_ type: T.Type) async -> T? {
        (home.current(device, hub: hub)?.types ?? self)[type]
    }

    /// A type by its hub name (`DimmableLight`), untyped.
    public subscript(named name: String) -> DynamicDeviceType? { all.first { $0.name == name } }

    /// The primary type.
    public var primary: DynamicDeviceType? { all.first { $0.metadata.isPrimaryType } }

    /// The type now, then on every change of it (the Home APIs' Combine publisher). Finishes when the device is
    /// removed, the home closed or the consumer's task cancelled.
    public func subscribe<T: DeviceType>(_ type: T.Type) -> AsyncStream<T> {
        let updates = home.device(id: device)
        let (stream, continuation) = AsyncStream.makeStream(of: T.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            var last: T?
            do {
                for try await device in updates {
                    guard let value = device.types[type], value != last else { continue }
                    last = value
                    continuation.yield(value)
                }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The device's whole set of types now, then on every change; index it with `types[OnOffLightDeviceType.self]`.
    public func subscribeAll() -> AsyncStream<DeviceTypes> {
        let updates = home.device(id: device)
        let (stream, continuation) = AsyncStream.makeStream(of: DeviceTypes.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            do {
                for try await device in updates { continuation.yield(device.types) }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
