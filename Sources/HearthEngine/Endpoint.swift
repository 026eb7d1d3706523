import HearthModel

/// One device type of a device with its running traits (a Matter endpoint).
struct Endpoint: Sendable {
    let descriptor: DeviceTypeDescriptor
    let isPrimary: Bool
    var traits: [any TraitServer]
    /// Each trait's Matter FeatureMap, from the features it was made with.
    let featureMaps: [UInt32]
    /// Whether the type's traits mirror another hub's device.
    let isMirrored: Bool
    var connectivity: [SourceConnectivity]
    let actuator: (any EndpointActuator)?
    /// What the hardware was last asked to show, so unchanged steps cost nothing below.
    var lastOutput: EndpointOutput
    /// A timer step's output not yet written to the hardware (its lane writes the newest one).
    var pendingOutput: EndpointOutput?

    /// What the engine looks up per trait on every command, found once per combination of trait types and shared by
    /// every endpoint with those traits (a class, so that copying an endpoint copies a reference): per endpoint it
    /// was four arrays, about 430 bytes of every device's memory.
    final class Shape: Sendable {
        /// Per trait, the ids of the attributes reported on change (not quiet), and their names.
        let loudIDs: [[UInt32]]
        let loudNames: [[String]]
        /// Per trait, its id: finding a trait by id through each trait's `descriptor` copied every descriptor it
        /// passed.
        let traitIDs: [TraitID]
        /// The traits that listen to couplings.
        let listeners: [Int]
        /// Per trait, whether a scene stores it; and where Scenes Management is. Found once: dynamic casts of every
        /// trait on every command cost more than the rest of `invalidateScene`.
        let sceneCapable: [Bool]
        let scenesIndex: Int?
        /// Per trait, whether it needs the endpoint's view to act (``TraitServer/readsEndpoint``).
        let readsEndpoint: [Bool]
        /// Where Groups is: the home's list of group memberships casts one trait per endpoint, not every trait.
        let groupsIndex: Int?

        init(_ traits: [any TraitServer]) {
            let loud = traits.map { t in type(of: t).descriptor.attributes.filter { !$0.hasQuietReporting } }
            loudIDs = loud.map { $0.map(\.id) }
            loudNames = loud.map { $0.map(\.name) }
            traitIDs = traits.map { type(of: $0).descriptor.id }
            // A scene-capable trait hears scene recalls whether or not it listens to the other couplings.
            listeners = traits.indices.filter {
                type(of: traits[$0]).listensToSignals || traits[$0] is any SceneCapable
            }
            sceneCapable = traits.map { $0 is any SceneCapable }
            scenesIndex = traits.firstIndex { $0 is ScenesManagementServer }
            readsEndpoint = traits.map { type(of: $0).readsEndpoint }
            groupsIndex = traits.firstIndex { $0 is GroupsServer }
        }

        /// What `Shape` depends on: the traits' types, in order.
        static func key(_ traits: [any TraitServer]) -> [ObjectIdentifier] {
            traits.map { ObjectIdentifier(type(of: $0)) }
        }
    }

    private let shape: Shape
    /// The shape, as an identity for `DeviceTypeView.traitTypes`.
    var traitTypes: any AnyObject & Sendable { shape }
    private var loudIDs: [[UInt32]] { shape.loudIDs }
    private var traitIDs: [TraitID] { shape.traitIDs }
    private var listeners: [Int] { shape.listeners }
    private var sceneCapable: [Bool] { shape.sceneCapable }
    private var scenesIndex: Int? { shape.scenesIndex }

    /// The endpoint's Groups trait, if it has one.
    var groups: GroupsServer? { shape.groupsIndex.flatMap { traits[$0] as? GroupsServer } }
    /// The endpoint's Scenes Management trait, if it has one.
    var scenes: ScenesManagementServer? { shape.scenesIndex.flatMap { traits[$0] as? ScenesManagementServer } }

    /// `shapes`: the shapes made so far, by ``Shape/key(_:)``; this endpoint's is taken from there or added.
    init(descriptor: DeviceTypeDescriptor, isPrimary: Bool, traits: [any TraitServer], featureMaps: [UInt32],
         isMirrored: Bool, connectivity: [SourceConnectivity], actuator: (any EndpointActuator)?,
         shapes: inout [[ObjectIdentifier]: Shape]) {
        self.descriptor = descriptor
        self.isPrimary = isPrimary
        self.traits = traits
        self.featureMaps = featureMaps
        self.isMirrored = isMirrored
        self.connectivity = connectivity
        self.actuator = actuator
        let key = Shape.key(traits)
        if let known = shapes[key] {
            self.shape = known
        } else {
            self.shape = Shape(traits)
            shapes[key] = self.shape
        }
        self.lastOutput = EndpointOutput()
        self.lastOutput = output
    }

    // `output` and `nextDeadline` run several times a command: through a buffer pointer they do not copy each trait
    // out of the array as `for t in traits` does.
    var output: EndpointOutput {
        var o = EndpointOutput()
        traits.withUnsafeBufferPointer { ts in
            for i in ts.indices { ts[i].render(into: &o) }
        }
        return o
    }

    /// This endpoint once its hardware shows `output`.
    func written(_ output: EndpointOutput) -> Endpoint {
        var endpoint = self
        endpoint.lastOutput = output
        endpoint.pendingOutput = nil
        return endpoint
    }

    var nextDeadline: EngineInstant? {
        traits.withUnsafeBufferPointer { ts in
            var best: EngineInstant?
            for i in ts.indices { if let d = ts[i].nextDeadline, best == nil || d < best! { best = d } }
            return best
        }
    }

    func traitIndex(_ id: TraitID) -> Int? {
        traitIDs.firstIndex(of: id)
    }

    func traitID(at index: Int) -> TraitID { traitIDs[index] }

    /// Lets trait `index` act, then delivers the couplings it posted to the traits that listen, and
    /// records every change a client should see: non-quiet attributes by comparing before and after,
    /// quiet ones when a trait reported them. Only the acting trait and the listeners can change, so
    /// only they are compared, and only those no longer equal to what they were are read.
    @discardableResult
    mutating func perform(_ index: Int, now: EngineInstant, stepInterval: Int64, deviceID: String,
                          changes: inout [HomeEvent],
                          _ action: (inout any TraitServer, inout TraitContext) throws(HomeError) -> Void)
        throws(HomeError) -> [String: Value]?
    {
        // The traits as they were. The endpoint is a copy of the engine's, so this shares the engine's buffer: it
        // costs a retain, and the first change below copies the buffer as it would have anyway.
        let earlier = traits
        var context = TraitContext(now: now, stepInterval: stepInterval, output: output)
        if shape.readsEndpoint[index] { context.endpoint = EndpointView(traits: traits) }
        try action(&traits[index], &context)
        var tablesChanged: [Int] = context.tableChanged ? [index] : []
        var reported: [(trait: Int, attribute: UInt32)] = context.reports.map { (index, $0) }
        var events: [(trait: Int, name: String, fields: [String: Value])] = context.events.map {
            (index, $0.name, $0.fields)
        }
        var pending: [(source: Int, signal: EndpointSignal)] = context.signals.map { (index, $0) }
        var delivered = 0
        while delivered < pending.count {
            let (source, signal) = pending[delivered]
            delivered += 1
            precondition(delivered < 64, "endpoint signals loop: \(signal)")
            for j in listeners where j != source {
                var c = TraitContext(now: now, stepInterval: stepInterval, output: output)
                if case .recallScene(let scene) = signal {
                    // Every scene-capable trait recalls its own part; the others are not told.
                    guard var capable = traits[j] as? any SceneCapable else { continue }
                    let cluster = type(of: capable).descriptor.clusterID
                    capable.recall(scene.values[cluster] ?? [:], of: scene, context: &c)
                    traits[j] = capable
                } else {
                    traits[j].receive(signal, context: &c)
                }
                if c.tableChanged && !tablesChanged.contains(j) { tablesChanged.append(j) }
                if !c.reports.isEmpty { reported += c.reports.map { (j, $0) } }
                if !c.events.isEmpty { events += c.events.map { (j, $0.name, $0.fields) } }
                if !c.signals.isEmpty { pending += c.signals.map { (j, $0) } }
            }
        }

        let typeName = descriptor.name
        for i in listeners { recordLoudChanges(of: i, since: earlier, deviceID, typeName, into: &changes) }
        if !listeners.contains(index) {
            recordLoudChanges(of: index, since: earlier, deviceID, typeName, into: &changes)
        }
        var seen: [(Int, UInt32)] = []
        for (i, id) in reported where !seen.contains(where: { $0 == (i, id) }) {
            seen.append((i, id))
            if let value = traits[i].read(id) {
                changes.append(attributeEvent(deviceID, typeName, trait: i, id, value))
            } else {
                changes.append(unsupportedEvent(deviceID, typeName, trait: i, id))
            }
        }
        for e in events {
            changes.append(HomeEvent(deviceID: deviceID, change: .event(
                type: typeName, trait: traitIDs[e.trait], name: e.name, fields: e.fields)))
        }
        for i in tablesChanged {
            changes.append(HomeEvent(deviceID: deviceID, change: .table(type: typeName, trait: traitIDs[i])))
        }
        return context.response
    }

    /// The loud attributes of trait `i` that differ from `earlier[i]`'s, as changes. A trait equal to what it was
    /// changed nothing, and is not read: most of a command's traits (a toggle's listeners, mostly) are left so.
    private func recordLoudChanges(of i: Int, since earlier: [any TraitServer], _ deviceID: String, _ typeName: String,
                                   into changes: inout [HomeEvent]) {
        let unchanged = earlier.withUnsafeBufferPointer { earlier in
            traits.withUnsafeBufferPointer { traits in
                let before: any TraitServer = earlier[i]
                return Self.isUnchanged(traits[i], since: before)
            }
        }
        guard !unchanged else { return }
        let ids = loudIDs[i]
        // Before and after in one array, each read with one call: a call on an existential copies the trait out.
        var values = [Value?](repeating: nil, count: 2 * ids.count)
        earlier.withUnsafeBufferPointer { earlier in earlier[i].read(ids, into: &values, at: 0) }
        traits.withUnsafeBufferPointer { traits in traits[i].read(ids, into: &values, at: ids.count) }
        for k in ids.indices {
            guard let value = values[ids.count + k] else {
                if values[k] != nil {
                    changes.append(HomeEvent(deviceID: deviceID, change: .unsupported(
                        type: typeName, trait: traitIDs[i], attribute: shape.loudNames[i][k])))
                }
                continue
            }
            guard value != values[k] else { continue }
            changes.append(HomeEvent(deviceID: deviceID, change: .attribute(
                type: typeName, trait: traitIDs[i], attribute: shape.loudNames[i][k], value: value)))
        }
    }

    /// `body` of `trait` as the `T` it is, read in place; nil when it is another type. A cast (`as? T`) copies the
    /// whole trait out of its existential first, which on every command cost more than what was read.
    private static func read<Actual: TraitServer, T: TraitServer, R>(_ trait: Actual, as: T.Type, _ body: (T) -> R)
        -> R?
    {
        guard Actual.self == T.self else { return nil }
        return withUnsafePointer(to: trait) { $0.withMemoryRebound(to: T.self, capacity: 1) { body($0.pointee) } }
    }

    /// Opens `earlier` (Swift opens an existential argument of a generic function, not of a method called on another
    /// existential) for ``TraitServer/isUnchanged(since:)``.
    private static func isUnchanged<Earlier: TraitServer>(_ trait: any TraitServer, since earlier: Earlier) -> Bool {
        trait.isUnchanged(since: earlier)
    }

    private func unsupportedEvent(_ deviceID: String, _ typeName: String, trait i: Int, _ id: UInt32) -> HomeEvent {
        let d = type(of: traits[i]).descriptor
        let name = d.attributes.first { $0.id == id }?.name ?? String(id)
        return HomeEvent(deviceID: deviceID, change: .unsupported(type: typeName, trait: d.id, attribute: name))
    }

    private func attributeEvent(_ deviceID: String, _ typeName: String, trait i: Int, _ id: UInt32, _ value: Value)
        -> HomeEvent
    {
        let d = type(of: traits[i]).descriptor
        let name = d.attributes.first { $0.id == id }?.name ?? String(id)
        return HomeEvent(
            deviceID: deviceID, change: .attribute(type: typeName, trait: d.id, attribute: name, value: value))
    }

    /// After a client's command or write to trait `index`: if that trait is one a scene stores, the scene last
    /// recalled no longer describes the endpoint (Matter's SceneValid goes FALSE). A recall's own transition is not a
    /// client's command, so it keeps the scene valid.
    mutating func invalidateScene(after index: Int, now: EngineInstant, stepInterval: Int64, deviceID: String,
                                  changes: inout [HomeEvent]) {
        guard sceneCapable[index], let s = scenesIndex else { return }
        // A local, so that Swift opens it for `read` (Swift 6.2, as Debian's swiftlang has it, does not open an
        // array's element).
        let scenesTrait: any TraitServer = traits[s]
        guard Self.read(scenesTrait, as: ScenesManagementServer.self, { $0.isSceneValid }) == true else { return }
        _ = try? perform(s, now: now, stepInterval: stepInterval, deviceID: deviceID, changes: &changes) { t, _ in
            guard var scenes = t as? ScenesManagementServer else { return }
            scenes.invalidateScene()
            t = scenes
        }
    }

    /// Runs every timer due at `instant`. Timer steps cannot fail; writing their output is the lane's job
    /// (`recordStepOutput`), and an output fault is the actuator's to report.
    mutating func advance(at instant: EngineInstant, stepInterval: Int64, deviceID: String, changes: inout [HomeEvent])
    {
        for i in traits.indices {
            guard let due = traits[i].nextDeadline, due <= instant else { continue }
            _ = try? perform(i, now: instant, stepInterval: stepInterval, deviceID: deviceID, changes: &changes) {
                t, c in
                t.advance(context: &c)
            }
        }
    }

    /// After a timer step: keeps the output for the lane to write if it changed. True when no write of this
    /// endpoint is queued yet (otherwise the queued one will take the newest output).
    mutating func recordStepOutput() -> Bool {
        guard actuator != nil else { return false }
        let now = output
        guard now != lastOutput else { return false }
        lastOutput = now
        defer { pendingOutput = now }
        return pendingOutput == nil
    }

    func snapshot() -> DeviceTypeSnapshot {
        let traitSnapshots = traits.enumerated().map { i, trait in
            let d = type(of: trait).descriptor
            return TraitSnapshot(
                descriptor: d,
                attributes: d.attributes.map { AttributeReading(descriptor: $0, value: trait.read($0)) },
                supportedCommands: d.commands.filter(trait.supports).map(\.name),
                sourceConnectivity: connectivity[i])
        }
        return DeviceTypeSnapshot(descriptor: descriptor, isPrimaryType: isPrimary, traits: traitSnapshots)
    }
}
