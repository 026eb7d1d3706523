public import HearthModel
import HearthSync

/// The hub's devices and their running traits: the one place commands, writes and hardware
/// readings change state.
///
/// The state has one owner, the engine lock, and that lock is held only to compute: never across I/O,
/// never while calling out. A command or write runs in three steps (docs/architecture.md):
/// 1. under the engine lock, the endpoint is copied and the command runs on the copy;
/// 2. if the hardware must change, the lock is released and the device's actuator is driven;
/// 3. under the lock again, the copy is kept, or, if the hardware refused, dropped: nothing is half-applied.
/// A per-device gate keeps two transactions of one device from interleaving (gate, then engine lock: never
/// the other way round), so a device whose hardware is slow delays only itself. Timer steps (fades, blinks)
/// are committed at once and their output is written on the device's lane (`DeviceLanes`), newest first.
public final class Home: Sendable {
    public let clock: any EngineClock
    public let options: EngineOptions
    /// The traits this home runs; adapters read descriptors from it to translate requests.
    public let registry: TraitRegistry
    let state: Locked<State>
    private let observers = Locked(Observers())
    private let waker = DeadlineWaker()
    /// Device ids by index; devices are fixed once the home is built, so this needs no lock.
    private let indexByID: [String: Int]
    /// One per device: held from computing a transaction to committing it, across its hardware write.
    private let gates: [DeviceGate]
    /// One per device: where its hardware writes of timer steps, and whatever callers queue, run.
    private let lanes: DeviceLanes

    struct Device: Sendable {
        var id: String
        var name: String
        var structureID: String?
        var roomID: String?
        var isMatterDevice: Bool
        var endpoints: [Endpoint]
        /// Which of name, structureID and roomID a user set (only those are saved).
        var userSet: Set<String> = []
        /// A transaction has computed a new state and is writing it to the hardware; timers wait for its commit.
        var isWriting = false
        /// A timer came due while `isWriting`; the transaction's commit runs it.
        var timerDeferred = false
    }

    struct State: Sendable {
        var devices: [Device] = []
        var index: [String: Int] = [:]
        var timers = DeadlineHeap()
    }

    struct Observers: Sendable {
        var nextID = 0
        var handlers: [Int: @Sendable ([HomeEvent]) -> Void] = [:]
        var streams: [Int: AsyncStream<HomeEvent>.Continuation] = [:]
    }

    /// Problems met while restoring saved state; restoring never fails, it skips what does not fit.
    public let restoreWarnings: [String]

    /// Builds every device from its configuration, then its saved state, then applies start-up
    /// behaviour. A configuration error names the device, type, trait and attribute.
    public init(devices configurations: [DeviceConfiguration], saved: [String: SavedDevice] = [:],
                clock: any EngineClock = MonotonicClock(), options: EngineOptions = EngineOptions(),
                registry: TraitRegistry = .standard) throws(HomeError)
    {
        self.clock = clock
        self.options = options
        self.registry = registry
        var s = State()
        var warnings: [String] = []
        let now = clock.now
        var shapes: [[ObjectIdentifier]: Endpoint.Shape] = [:]
        for configuration in configurations {
            guard s.index[configuration.id] == nil else {
                throw .constraintError("device id '\(configuration.id)' is used twice; ids must be unique")
            }
            let device = try Self.build(configuration, saved: saved[configuration.id], registry: registry, now: now,
                                        stepInterval: options.stepInterval, shapes: &shapes, warnings: &warnings)
            s.index[device.id] = s.devices.count
            s.devices.append(device)
            for (e, endpoint) in device.endpoints.enumerated() {
                if let d = endpoint.nextDeadline { s.timers.push(d, device: s.devices.count - 1, endpoint: e) }
            }
        }
        indexByID = s.index
        gates = s.devices.map { _ in DeviceGate() }
        lanes = DeviceLanes(deviceIDs: s.devices.map(\.id))
        state = Locked(s)
        restoreWarnings = warnings
    }

    private static func build(
        _ c: DeviceConfiguration, saved: SavedDevice?, registry: TraitRegistry,
        now: EngineInstant, stepInterval: Int64, shapes: inout [[ObjectIdentifier]: Endpoint.Shape],
        warnings: inout [String]
    ) throws(HomeError)
        -> Device
    {
        // Where a problem is, for its message: made only when there is one (every device of a home is built here).
        func where_() -> String { "device '\(c.id)'" }
        guard !c.id.isEmpty else { throw .constraintError("a device needs a non-empty id") }
        guard !c.types.isEmpty else { throw .constraintError("\(where_()) needs at least one device type") }
        let primaries = c.types.filter { $0.isPrimary == true }.count
        guard primaries <= 1 else {
            throw .constraintError("\(where_()) marks \(primaries) types as primary; exactly one may be")
        }
        var endpoints: [Endpoint] = []
        for (n, typeConfig) in c.types.enumerated() {
            let type = typeConfig.type
            func at() -> String { "\(where_()) type \(type.name)" }
            if c.types[..<n].contains(where: { $0.type.name == type.name }) {
                throw .constraintError("\(where_()) lists \(type.name) twice; a device has each type once")
            }
            var traitConfigs = typeConfig.traits
            for configured in traitConfigs where !type.allows(configured.id) {
                let allowed = (type.requiredTraits + type.optionalTraits).map(\.qualifiedName).joined(separator: ", ")
                throw .unsupportedCluster("\(at()) cannot have trait \(configured.id); allowed: \(allowed)")
            }
            for (k, configured) in traitConfigs.enumerated()
            where traitConfigs[..<k].contains(where: { $0.id == configured.id }) {
                throw .constraintError("\(at()) lists trait \(configured.id) twice")
            }
            for required in type.requiredTraits where !traitConfigs.contains(where: { $0.id == required }) {
                traitConfigs.append(TraitConfiguration(required))
            }
            let isPrimary = typeConfig.isPrimary ?? (primaries == 0 && n == 0)
            if isPrimary && !typeConfig.isMirrored && type.allows(.basicInformation)
                && !traitConfigs.contains(where: { $0.id == .basicInformation }) {
                traitConfigs.append(TraitConfiguration(.basicInformation))
            }
            if typeConfig.isMirrored {
                for i in traitConfigs.indices { traitConfigs[i].connectivity = .notHeardFrom }
            }
            var traits: [any TraitServer] = []
            // Kept for the device's life: exactly as many as it has, not the doubling growth's capacity.
            traits.reserveCapacity(traitConfigs.count)
            var featureMaps: [UInt32] = []
            featureMaps.reserveCapacity(traitConfigs.count)
            for tc in traitConfigs {
                func ta() -> String { "\(at()) trait \(tc.id)" }
                guard let standard = registry.server(for: tc.id) else {
                    throw .unsupportedCluster("\(ta()) is not a trait this hub implements")
                }
                let server = typeConfig.isMirrored ? mirrored(standard) : standard
                var trait: any TraitServer
                do throws(HomeError) {
                    // Most traits have neither configured nor required features: no set is made for them.
                    let required = type.requiredFeatures.isEmpty ? nil : type.requiredFeatures[tc.id]
                    let features = required.map { tc.features.isEmpty ? $0 : tc.features.union($0) } ?? tc.features
                    trait = try server.init(features: features)
                    featureMaps.append(server.descriptor.featureMap(of: features))
                } catch {
                    throw HomeError(code: error.code, status: error.status, message: "\(ta()): \(error.message)")
                }
                let descriptor = server.descriptor
                for (name, value) in tc.attributes.sorted(by: { $0.key < $1.key }) {
                    guard let attribute = descriptor.attribute(named: name) else {
                        let known = descriptor.attributes.map(\.name).joined(separator: ", ")
                        throw .unsupportedAttribute("\(ta()) has no attribute '\(name)'; its attributes are \(known)")
                    }
                    do throws(HomeError) {
                        try attribute.type.check(
                            value, nullable: attribute.isNullable, constraint: attribute.constraint,
                            what: name)
                        try trait.load(attribute, value)
                    } catch {
                        throw HomeError(code: error.code, status: error.status, message: "\(ta()): \(error.message)")
                    }
                }
                do throws(HomeError) {
                    try trait.checkConfiguration()
                } catch {
                    throw HomeError(code: error.code, status: error.status, message: "\(ta()): \(error.message)")
                }
                // Tables (groups, scenes): the configured entries, then the saved ones over them, entry by entry.
                if let table = tc.table {
                    do throws(HomeError) { try trait.restore(table: table) } catch {
                        throw HomeError(code: error.code, status: error.status, message: "\(ta()): \(error.message)")
                    }
                }
                if let table = saved?.tables[type.name]?[tc.id.qualifiedName]?.value {
                    do throws(HomeError) { try trait.restore(table: table) } catch {
                        warnings.append("\(ta()): saved table partly skipped: \(error.message)")
                    }
                }
                if let values = saved?.attributes[type.name]?[tc.id.qualifiedName] {
                    for (name, savedValue) in values.sorted(by: { $0.key < $1.key }) {
                        guard let attribute = descriptor.attribute(named: name), attribute.isNonVolatile else {
                            continue
                        }
                        do throws(HomeError) {
                            try attribute.type.check(savedValue.value, nullable: attribute.isNullable,
                                                     constraint: attribute.constraint, what: name)
                            try trait.load(attribute, savedValue.value)
                        } catch {
                            warnings.append("\(ta()): saved \(name) skipped: \(error.message)")
                        }
                    }
                }
                traits.append(trait)
            }
            for i in traits.indices {
                var context = TraitContext(now: now, stepInterval: stepInterval, output: EndpointOutput())
                traits[i].startUp(context: &context)
            }
            endpoints.append(Endpoint(descriptor: type, isPrimary: isPrimary, traits: traits, featureMaps: featureMaps,
                                      isMirrored: typeConfig.isMirrored,
                                      connectivity: traitConfigs.map(\.connectivity), actuator: typeConfig.actuator,
                                      shapes: &shapes))
        }
        var device = Device(id: c.id, name: HomeDevice.truncatedName(c.name), structureID: c.structureID,
                            roomID: c.roomID, isMatterDevice: c.isMatterDevice, endpoints: endpoints)
        if let saved {
            if let name = saved.name { device.name = HomeDevice.truncatedName(name); device.userSet.insert("name") }
            if let v = saved.roomID { device.roomID = v.isEmpty ? nil : v; device.userSet.insert("roomID") }
            if let v = saved.structureID {
                device.structureID = v.isEmpty ? nil : v; device.userSet.insert("structureID")
            }
        }
        return device
    }

    // MARK: Reading

    /// A snapshot of every device (the Home APIs' `devices().list()`).
    public func list() -> [HomeDevice] {
        state.withLock { s in s.devices.map(Self.snapshot) }
    }

    /// Every device's snapshot, one at a time, each taken under the engine's lock and handed to `body` after it: what
    /// a summary of the home needs without a snapshot of every device alive at once (`list()` holds them all, the
    /// biggest part of a large hub's peak heap, whose fragments stay in its resident memory). Each
    /// device is consistent; the home as a whole is not one instant (a change meanwhile is published after it anyway).
    public func forEachDevice(_ body: (HomeDevice) throws -> Void) rethrows {
        for d in 0..<gates.count {
            try body(state.withLock { s in Self.snapshot(s.devices[d]) })
        }
    }

    public func device(_ id: String) throws(HomeError) -> HomeDevice {
        try state.withLock { s throws(HomeError) in Self.snapshot(s.devices[try Self.deviceIndex(id, in: s)]) }
    }

    public var deviceIDs: [String] { state.withLock { $0.devices.map(\.id) } }

    /// What the hardware of a device type shows now; bindings request their lines with it so a relay
    /// starts in its start-up state without a glitch.
    public func output(_ deviceID: String, type: String) throws(HomeError) -> EndpointOutput {
        try state.withLock { s throws(HomeError) in
            let d = try Self.deviceIndex(deviceID, in: s)
            guard let e = s.devices[d].endpoints.firstIndex(where: { $0.descriptor.name == type }) else {
                throw Self.noType(type, in: s.devices[d])
            }
            return s.devices[d].endpoints[e].output
        }
    }

    /// What a device would save now: user-set metadata and the non-volatile attributes.
    public func saved(_ id: String) throws(HomeError) -> SavedDevice {
        try state.withLock { s throws(HomeError) in Self.saved(s.devices[try Self.deviceIndex(id, in: s)]) }
    }

    public func savedState() -> [String: SavedDevice] {
        state.withLock { s in Dictionary(uniqueKeysWithValues: s.devices.map { ($0.id, Self.saved($0)) }) }
    }

    static func saved(_ device: Device) -> SavedDevice {
        var result = SavedDevice()
        if device.userSet.contains("name") { result.name = device.name }
        if device.userSet.contains("roomID") { result.roomID = device.roomID ?? "" }
        if device.userSet.contains("structureID") { result.structureID = device.structureID ?? "" }
        for endpoint in device.endpoints {
            var traits: [String: [String: SavedValue]] = [:]
            for trait in endpoint.traits {
                let d = type(of: trait).descriptor
                var values: [String: SavedValue] = [:]
                for attribute in d.attributes where attribute.isNonVolatile {
                    if let v = trait.read(attribute) { values[attribute.name] = SavedValue(v) }
                }
                if !values.isEmpty { traits[d.id.qualifiedName] = values }
                if let table = trait.table {
                    result.tables[endpoint.descriptor.name, default: [:]][d.id.qualifiedName] = SavedValue(table)
                }
            }
            if !traits.isEmpty { result.attributes[endpoint.descriptor.name] = traits }
        }
        return result
    }

    static func snapshot(_ d: Device) -> HomeDevice {
        HomeDevice(id: d.id, name: d.name, structureID: d.structureID, roomID: d.roomID,
                   isMatterDevice: d.isMatterDevice, types: d.endpoints.map { $0.snapshot() })
    }

    // MARK: Commands and writes

    /// Runs a command. `type` may be left out when exactly one of the device's types has the trait. Returns the
    /// command's response fields (Matter's `…Response`, e.g. Groups' `viewGroup`), or nil for a plain status.
    @discardableResult
    public func invoke(_ deviceID: String, type: String? = nil, trait: String, command: String,
                       arguments: [String: Value] = [:]) throws(HomeError) -> [String: Value]?
    {
        var response: [String: Value]?
        try transaction(deviceID, type: type, trait: trait, needsConnectivity: true) {
            ep, i, now, step, id, changes throws(HomeError) in
            let server = Swift.type(of: ep.traits[i])
            guard let descriptor = server.descriptor.command(named: command) else {
                let known = server.descriptor.commands.map(\.name).joined(separator: ", ")
                throw .unsupportedCommand("trait \(server.descriptor.id) has no command '\(command)'"
                                          + (known.isEmpty ? "; it takes no commands" : "; its commands are \(known)"))
            }
            guard ep.traits[i].supports(descriptor) else {
                let supported = server.descriptor.commands.filter(ep.traits[i].supports).map(\.name).joined(
                    separator: ", ")
                throw .unsupportedCommand(
                    "\(ep.descriptor.name) of device '\(id)' does not support \(server.descriptor.id).\(command)"
                        + "; it supports \(supported)")
            }
            try Self.checkConnectivity(ep, i, deviceID: id)
            let validated = try descriptor.validate(arguments)
            response = try ep.perform(i, now: now, stepInterval: step, deviceID: id, changes: &changes) {
                t, c throws(HomeError) in
                try t.invoke(validated, context: &c)
            }
            ep.invalidateScene(after: i, now: now, stepInterval: step, deviceID: id, changes: &changes)
        }
        return response
    }

    /// Writes attributes (the Home APIs' `update`): all of them or, on any error, none.
    public func update(_ deviceID: String, type: String? = nil, trait: String, attributes: [String: Value])
        throws(HomeError)
    {
        guard !attributes.isEmpty else { throw .invalidCommand("update names no attribute to write") }
        try transaction(deviceID, type: type, trait: trait, needsConnectivity: true) {
            ep, i, now, step, id, changes throws(HomeError) in
            let descriptor = Swift.type(of: ep.traits[i]).descriptor
            // Matter's write checks, in order: attribute → writable → value.
            var checked: [(AttributeDescriptor, Value)] = []
            for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                guard let attribute = descriptor.attribute(named: name), ep.traits[i].read(attribute) != nil else {
                    let known = descriptor.attributes.filter { ep.traits[i].read($0) != nil }.map(\.name)
                    throw .unsupportedAttribute("trait \(descriptor.id) of device '\(id)' has no attribute '\(name)'; "
                                                + "it has \(known.joined(separator: ", "))")
                }
                guard attribute.isWritable else {
                    let writable = descriptor.attributes.filter { $0.isWritable && ep.traits[i].read($0) != nil }.map(
                        \.name)
                    throw .unsupportedWrite(
                        "\(descriptor.id).\(name) is read-only"
                            + (writable.isEmpty ? "" : "; writable: \(writable.joined(separator: ", "))"))
                }
                try attribute.type.check(value, nullable: attribute.isNullable, constraint: attribute.constraint,
                                         what: "\(descriptor.id).\(name)")
                checked.append((attribute, value))
            }
            try Self.checkConnectivity(ep, i, deviceID: id)
            try ep.perform(i, now: now, stepInterval: step, deviceID: id, changes: &changes) { t, c throws(HomeError) in
                for (attribute, value) in checked { try t.write(attribute, value, context: &c) }
            }
            ep.invalidateScene(after: i, now: now, stepInterval: step, deviceID: id, changes: &changes)
        }
    }

    /// A reading from the hardware under a trait (a measurement, a switch position).
    public func ingest(_ deviceID: String, type: String? = nil, trait: String, _ input: TraitInput) throws(HomeError) {
        try transaction(deviceID, type: type, trait: trait, needsConnectivity: false) {
            ep, i, now, step, id, changes throws(HomeError) in
            try ep.perform(i, now: now, stepInterval: step, deviceID: id, changes: &changes) { t, c throws(HomeError) in
                try t.ingest(input, context: &c)
            }
        }
    }

    /// Sets where a trait's data comes from and whether it can be reached.
    public func setConnectivity(_ deviceID: String, type: String? = nil, trait: String,
                                _ connectivity: SourceConnectivity) throws(HomeError)
    {
        try transaction(deviceID, type: type, trait: trait, needsConnectivity: false) { ep, i, _, _, id, changes in
            guard ep.connectivity[i] != connectivity else { return }
            ep.connectivity[i] = connectivity
            changes.append(HomeEvent(deviceID: id, change: .connectivity(
                type: ep.descriptor.name, trait: Swift.type(of: ep.traits[i]).descriptor.id, connectivity)))
        }
    }

    private static func checkConnectivity(_ ep: Endpoint, _ i: Int, deviceID: String) throws(HomeError) {
        let c = ep.connectivity[i]
        guard c.acceptsCommands else {
            let trait = Swift.type(of: ep.traits[i]).descriptor.id
            let why = c.dataSourceLocality == .unspecified
                ? "has not been heard from yet" : "is \(c.connectivityState.rawValue)"
            throw .unavailable("\(trait) of device '\(deviceID)' \(why); try again when it is online")
        }
    }

    private typealias Body = (inout Endpoint, Int, EngineInstant, Int64, String, inout [HomeEvent]) throws(HomeError) ->
        Void

    /// Finds the trait, runs `body` on a copy of its endpoint, drives the hardware outside the engine lock,
    /// and keeps the copy only if all of that succeeded. Events go to observers after every lock is released.
    private func transaction(_ deviceID: String, type: String?, trait: String, needsConnectivity: Bool,
                             _ body: Body) throws(HomeError)
    {
        let d = try index(of: deviceID)
        let step = options.stepInterval
        var changes: [HomeEvent] = []
        let woke = try gates[d].lock.withLock { _ throws(HomeError) -> Bool in
            let now = clock.now
            // 1. Compute on a copy, under the engine lock.
            var woke = false
            let write = try state.withLock { s throws(HomeError) -> PendingWrite? in
                let (e, i) = try Self.resolve(trait: trait, type: type, in: s.devices[d])
                var endpoint = s.devices[d].endpoints[e]
                let before = endpoint.nextDeadline
                try body(&endpoint, i, now, step, deviceID, &changes)
                let output = endpoint.output
                guard output != endpoint.lastOutput, let actuator = endpoint.actuator else {
                    woke = Self.commit(&s, d, e, consume endpoint, before: before)
                    return nil
                }
                s.devices[d].isWriting = true
                return PendingWrite(endpoint: e, copy: endpoint, before: before, output: output, actuator: actuator)
            }
            guard let write else { return woke }
            // 2. Drive the hardware with no engine lock held: only this device waits for it.
            var refusal: HomeError?
            do throws(HomeError) { try write.actuator.drive(write.output) } catch { refusal = error }
            // 3. Keep the copy, or drop it if the hardware refused; run any timer held back meanwhile.
            woke = state.withLock { s -> Bool in
                s.devices[d].isWriting = false
                var woke = false
                if refusal == nil {
                    // Made in one expression: setting the output's fields on a local and then `consume`-ing it is a
                    // case Swift 6.3's move checker rejects.
                    woke = Self.commit(&s, d, write.endpoint, write.copy.written(write.output), before: write.before)
                }
                if s.devices[d].timerDeferred {
                    s.devices[d].timerDeferred = false
                    Self.scheduleTimers(&s, d)
                    woke = true
                }
                return woke
            }
            if let refusal {
                if woke { waker.wake() }
                throw refusal
            }
            return woke
        }
        if woke { waker.wake() }
        deliver(changes)
    }

    /// A transaction between computing its state and committing it.
    private struct PendingWrite {
        var endpoint: Int
        var copy: Endpoint
        var before: EngineInstant?
        var output: EndpointOutput
        var actuator: any EndpointActuator
    }

    /// Keeps `endpoint` as endpoint `e` of device `d`; true when it needs a timer earlier than before.
    private static func commit(_ s: inout State, _ d: Int, _ e: Int, _ endpoint: consuming Endpoint,
                               before: EngineInstant?) -> Bool {
        let after = endpoint.nextDeadline
        // Moved, not copied: the transaction's copy is not used again.
        s.devices[d].endpoints[e] = endpoint
        if let after, after != before {
            s.timers.push(after, device: d, endpoint: e)
            return true
        }
        return false
    }

    /// Puts every timer of device `d` back on the heap (after a transaction held them back).
    private static func scheduleTimers(_ s: inout State, _ d: Int) {
        for (e, endpoint) in s.devices[d].endpoints.enumerated() {
            if let next = endpoint.nextDeadline { s.timers.push(next, device: d, endpoint: e) }
        }
    }

    // MARK: Metadata

    /// Renames a device, cutting the name to 60 code points; never fails for length.
    @discardableResult
    public func setName(_ deviceID: String, _ name: String) throws(HomeError) -> HomeDevice {
        try setMetadata(deviceID, "name") { $0.name = HomeDevice.truncatedName(name) }
    }

    @discardableResult
    public func setRoom(_ deviceID: String, _ roomID: String?) throws(HomeError) -> HomeDevice {
        try setMetadata(deviceID, "roomID") {
            $0.roomID = roomID.flatMap { $0.isEmpty ? nil : HomeDevice.truncatedName($0) }
        }
    }

    @discardableResult
    public func setStructure(_ deviceID: String, _ structureID: String?) throws(HomeError) -> HomeDevice {
        try setMetadata(deviceID, "structureID") {
            $0.structureID = structureID.flatMap { $0.isEmpty ? nil : HomeDevice.truncatedName($0) }
        }
    }

    private func setMetadata(_ deviceID: String, _ key: String, _ change: (inout Device) -> Void) throws(HomeError)
        -> HomeDevice
    {
        let (device, changed) = try state.withLock { s throws(HomeError) in
            let d = try Self.deviceIndex(deviceID, in: s)
            let old = s.devices[d]
            change(&s.devices[d])
            s.devices[d].userSet.insert(key)
            let new = s.devices[d]
            let changed = old.name != new.name || old.roomID != new.roomID || old.structureID != new.structureID
            return (Self.snapshot(new), changed || !old.userSet.contains(key))
        }
        if changed { deliver([HomeEvent(deviceID: deviceID, change: .metadata)]) }
        return device
    }

    // MARK: Resolution

    /// The index of a device, without the engine lock (devices never change once the home is built).
    private func index(of id: String) throws(HomeError) -> Int {
        if let d = indexByID[id] { return d }
        return try state.withLock { s throws(HomeError) in try Self.deviceIndex(id, in: s) }
    }

    static func deviceIndex(_ id: String, in s: State) throws(HomeError) -> Int {
        guard let d = s.index[id] else {
            let known = s.devices.prefix(20).map(\.id).joined(separator: ", ")
            throw .notFound("no device '\(id)'" + (known.isEmpty ? "; this hub has no devices" : "; devices: \(known)")
                            + (s.devices.count > 20 ? ", …" : ""))
        }
        return d
    }

    private static func noType(_ type: String, in device: Device) -> HomeError {
        HomeError(.unsupportedEndpoint, "device '\(device.id)' has no type '\(type)'; its types are "
                  + device.endpoints.map(\.descriptor.name).joined(separator: ", "))
    }

    private static func resolve(trait: String, type: String?, in device: Device) throws(HomeError) -> (Int, Int) {
        let id = TraitID(qualifiedName: trait)
        if let type {
            guard let e = device.endpoints.firstIndex(where: { $0.descriptor.name == type }) else {
                throw noType(type, in: device)
            }
            guard let i = device.endpoints[e].traitIndex(id) else {
                let traits = device.endpoints[e].traits.map { Swift.type(of: $0).descriptor.id.qualifiedName }
                throw .unsupportedCluster("\(type) of device '\(device.id)' has no trait '\(trait)'; its traits are "
                                          + traits.joined(separator: ", "))
            }
            return (e, i)
        }
        // Most devices have one type: no list of candidates for them.
        if device.endpoints.count == 1, let i = device.endpoints[0].traitIndex(id) { return (0, i) }
        var found: [(Int, Int)] = []
        for e in device.endpoints.indices {
            if let i = device.endpoints[e].traitIndex(id) { found.append((e, i)) }
        }
        switch found.count {
        case 1: return found[0]
        case 0:
            var traits: [String] = []
            for endpoint in device.endpoints {
                for t in endpoint.traits where !traits.contains(Swift.type(of: t).descriptor.id.qualifiedName) {
                    traits.append(Swift.type(of: t).descriptor.id.qualifiedName)
                }
            }
            throw .unsupportedCluster("device '\(device.id)' has no trait '\(trait)'; its traits are "
                                      + traits.joined(separator: ", "))
        default:
            let types = found.map { device.endpoints[$0.0].descriptor.name }.joined(separator: ", ")
            throw .invalidCommand("trait '\(trait)' is on several types of device '\(device.id)' (\(types)); "
                                  + "say which with \"type\"")
        }
    }

    // MARK: Events

    /// Every change from now on, in order, until the consumer stops iterating.
    public func events() -> AsyncStream<HomeEvent> {
        let (stream, continuation) = AsyncStream<HomeEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let id = observers.withLock { o in
            o.nextID += 1
            o.streams[o.nextID] = continuation
            return o.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Calls `handler` with each batch of changes, synchronously on the thread that made them, after
    /// the engine's lock is released. For adapters that must publish before answering a command.
    @discardableResult
    public func observe(_ handler: @escaping @Sendable ([HomeEvent]) -> Void) -> Int {
        observers.withLock { o in
            o.nextID += 1
            o.handlers[o.nextID] = handler
            return o.nextID
        }
    }

    public func removeObserver(_ id: Int) {
        _ = observers.withLock { $0.handlers.removeValue(forKey: id) }
    }

    private func deliver(_ changes: [HomeEvent]) {
        guard !changes.isEmpty else { return }
        let (handlers, streams) = observers.withLock { o in (Array(o.handlers.values), Array(o.streams.values)) }
        for h in handlers { h(changes) }
        for s in streams { for c in changes { s.yield(c) } }
    }

    // MARK: Time

    /// The earliest instant some trait needs to run.
    public var nextDeadline: EngineInstant? {
        state.withLock { s in
            while let top = s.timers.peek {
                if s.devices[top.device].endpoints[top.endpoint].nextDeadline == top.deadline { return top.deadline }
                s.timers.pop()
            }
            return nil
        }
    }

    /// Runs every timer due up to `now`, each at its own instant, in order. A device whose transaction is writing
    /// to its hardware is skipped; that transaction runs its timers when it commits. Outputs that changed are
    /// written on each device's lane, so a slow device's hardware never holds up another device's steps.
    public func advance(to now: EngineInstant) {
        let step = options.stepInterval
        var changes: [HomeEvent] = []
        var writes: [(device: Int, endpoint: Int)] = []
        state.withLock { s in
            while let top = s.timers.peek, top.deadline <= now {
                s.timers.pop()
                let (d, e) = (top.device, top.endpoint)
                // Entries are never removed when a deadline moves; a stale one no longer matches.
                guard s.devices[d].endpoints[e].nextDeadline == top.deadline else { continue }
                guard !s.devices[d].isWriting else {
                    s.devices[d].timerDeferred = true
                    continue
                }
                s.devices[d].endpoints[e].advance(at: top.deadline, stepInterval: step, deviceID: s.devices[d].id,
                                                  changes: &changes)
                if s.devices[d].endpoints[e].recordStepOutput() { writes.append((d, e)) }
                if let next = s.devices[d].endpoints[e].nextDeadline { s.timers.push(next, device: d, endpoint: e) }
            }
        }
        for w in writes { lanes.async(w.device) { [self] in writePending(device: w.device, endpoint: w.endpoint) } }
        deliver(changes)
    }

    /// Writes the newest output a timer step left for an endpoint, if a transaction has not written a newer one.
    /// A fault is the actuator's to report (its binding takes the device offline); the next step tries again.
    private func writePending(device d: Int, endpoint e: Int) {
        gates[d].lock.withLock { _ in
            let pending = state.withLock { s -> (EndpointOutput, any EndpointActuator)? in
                guard let output = s.devices[d].endpoints[e].pendingOutput,
                      let actuator = s.devices[d].endpoints[e].actuator else { return nil }
                s.devices[d].endpoints[e].pendingOutput = nil
                return (output, actuator)
            }
            guard let (output, actuator) = pending else { return }
            try? actuator.drive(output)
        }
    }

    // MARK: Lanes

    /// Runs `work` on the device's lane: after everything queued for that device, never on the caller's thread.
    /// For work that may block on the device's hardware (a request, a re-read); false for an unknown device.
    @discardableResult
    public func enqueue(on deviceID: String, _ work: @escaping @Sendable () -> Void) -> Bool {
        guard let d = indexByID[deviceID] else { return false }
        lanes.async(d, work)
        return true
    }

    /// Where ``enqueue(on:limit:_:)`` put the work.
    public enum LaneAdmission: Sendable, Equatable {
        case queued
        /// `limit` pieces of bounded work were already queued or running on the device's lane: nothing was queued.
        case full
        case unknownDevice
    }

    /// Runs `work` on the device's lane, like ``enqueue(on:_:)``, unless `limit` pieces of work queued this way are
    /// already waiting or running there (a device whose hardware hangs while requests keep coming): then nothing is
    /// queued and the caller refuses the request, so what a stuck device holds stays bounded.
    public func enqueue(on deviceID: String, limit: Int, _ work: @escaping @Sendable () -> Void) -> LaneAdmission {
        guard let d = indexByID[deviceID] else { return .unknownDevice }
        return lanes.async(d, limit: limit, work) ? .queued : .full
    }

    /// Runs `work` on the device's lane and returns its result, suspending (not blocking) the caller meanwhile.
    public func onLane<R: Sendable>(of deviceID: String, _ work: @escaping @Sendable () -> R) async -> R? {
        guard let d = indexByID[deviceID] else { return nil }
        return await withCheckedContinuation { (c: CheckedContinuation<R?, Never>) in
            lanes.async(d) { c.resume(returning: work()) }
        }
    }

    /// Returns once every lane has run what was queued on it so far: the hardware shows every committed step.
    /// For tests and for shutdown.
    public func drainLanes() {
        for d in gates.indices { lanes.drain(d) }
    }

    /// Runs timers on the clock until the task is cancelled. Idle, it sleeps without waking.
    public func run() async {
        while !Task.isCancelled {
            advance(to: clock.now)
            await waker.wait(until: nextDeadline, clock: clock)
        }
    }
}

/// Serialises the transactions of one device; taken before the engine lock, never while holding it.
final class DeviceGate: Sendable {
    let lock = Locked(())
}

/// A min-heap of (deadline, device, endpoint); entries go stale instead of being removed.
struct DeadlineHeap: Sendable {
    struct Entry: Sendable {
        var deadline: EngineInstant
        var device: Int
        var endpoint: Int
    }
    private var items: [Entry] = []

    var peek: Entry? { items.first }

    mutating func push(_ deadline: EngineInstant, device: Int, endpoint: Int) {
        items.append(Entry(deadline: deadline, device: device, endpoint: endpoint))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].deadline < items[parent].deadline else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && items[l].deadline < items[m].deadline { m = l }
            if r < items.count && items[r].deadline < items[m].deadline { m = r }
            if m == i { return }
            items.swapAt(i, m)
            i = m
        }
    }
}

