public import HearthModel

/// Matter LevelControl (0x0008, revision 6) with the OnOff (OO) and Lighting (LT) features.
///
/// Levels move on the engine clock: the output is rendered every step (50 per second by default)
/// while CurrentLevel and RemainingTime are reported on Matter's quiet schedule (at most once a
/// second, at the end, on null↔non-null), so subscribers see a few messages per fade, not fifty.
public struct LevelControlServer: TraitServer {
    public static let optionsBitmap = BitmapType("OptionsBitmap", [(0, "executeIfOff"), (1, "coupleColorTempToLevel")])
    public static let moveModeEnum = EnumType("MoveModeEnum", [(0, "up"), (1, "down")])
    public static let stepModeEnum = EnumType("StepModeEnum", [(0, "up"), (1, "down")])

    public enum Attribute {
        public static let currentLevel = AttributeDescriptor(
            id: 0x0000, name: "currentLevel", type: .uint8,
            nullable: true, changedByCommands: true,
            nonVolatile: true, quiet: true)
        public static let remainingTime = AttributeDescriptor(
            id: 0x0001, name: "remainingTime", type: .uint16,
            changedByCommands: true, quiet: true)
        public static let minLevel = AttributeDescriptor(
            id: 0x0002, name: "minLevel", type: .uint8, constraint: 0...254)
        public static let maxLevel = AttributeDescriptor(
            id: 0x0003, name: "maxLevel", type: .uint8, constraint: 1...254)
        public static let options = AttributeDescriptor(
            id: 0x000F, name: "options", type: .bitmap(optionsBitmap),
            writable: true, nonVolatile: true)
        public static let onOffTransitionTime = AttributeDescriptor(
            id: 0x0010, name: "onOffTransitionTime",
            type: .uint16, writable: true, nonVolatile: true)
        public static let onLevel = AttributeDescriptor(
            id: 0x0011, name: "onLevel", type: .uint8, nullable: true,
            writable: true, nonVolatile: true)
        public static let onTransitionTime = AttributeDescriptor(
            id: 0x0012, name: "onTransitionTime", type: .uint16,
            nullable: true, writable: true, nonVolatile: true,
            constraint: 0...0xFFFE)
        public static let offTransitionTime = AttributeDescriptor(
            id: 0x0013, name: "offTransitionTime", type: .uint16,
            nullable: true, writable: true, nonVolatile: true,
            constraint: 0...0xFFFE)
        public static let defaultMoveRate = AttributeDescriptor(
            id: 0x0014, name: "defaultMoveRate", type: .uint8,
            nullable: true, writable: true, nonVolatile: true,
            constraint: 1...255)
        public static let startUpCurrentLevel = AttributeDescriptor(
            id: 0x4000, name: "startUpCurrentLevel",
            type: .uint8, nullable: true, writable: true,
            nonVolatile: true, constraint: 0...254)
    }

    static let optionsFields = [
        FieldDescriptor("optionsMask", .bitmap(optionsBitmap), default: .int(0)),
        FieldDescriptor("optionsOverride", .bitmap(optionsBitmap), default: .int(0)),
    ]

    public enum Command {
        static func moveToLevel(_ id: UInt32, _ name: String) -> CommandDescriptor {
            CommandDescriptor(id: id, name: name, fields: [
                FieldDescriptor("level", .uint8, constraint: 0...254),
                // Left out: as fast as possible; null: OnOffTransitionTime.
                FieldDescriptor("transitionTime", .uint16, nullable: true, default: .int(0), constraint: 0...0xFFFE),
            ] + optionsFields)
        }
        static func move(_ id: UInt32, _ name: String) -> CommandDescriptor {
            CommandDescriptor(id: id, name: name, fields: [
                FieldDescriptor("moveMode", .enumeration(moveModeEnum)),
                FieldDescriptor("rate", .uint8, nullable: true, default: .null),
            ] + optionsFields)
        }
        static func step(_ id: UInt32, _ name: String) -> CommandDescriptor {
            CommandDescriptor(id: id, name: name, fields: [
                FieldDescriptor("stepMode", .enumeration(stepModeEnum)),
                FieldDescriptor("stepSize", .uint8),
                FieldDescriptor("transitionTime", .uint16, nullable: true, default: .null, constraint: 0...0xFFFE),
            ] + optionsFields)
        }
        public static let moveToLevel = moveToLevel(0x00, "moveToLevel")
        public static let move = move(0x01, "move")
        public static let step = step(0x02, "step")
        public static let stop = CommandDescriptor(id: 0x03, name: "stop", fields: optionsFields)
        public static let moveToLevelWithOnOff = moveToLevel(0x04, "moveToLevelWithOnOff")
        public static let moveWithOnOff = move(0x05, "moveWithOnOff")
        public static let stepWithOnOff = step(0x06, "stepWithOnOff")
        public static let stopWithOnOff = CommandDescriptor(id: 0x07, name: "stopWithOnOff", fields: optionsFields)
    }

    public static let listensToSignals = true

    public static let descriptor = TraitDescriptor(
        id: .levelControl, clusterID: 0x0008, revision: 6,
        features: [.init(bit: 0, "onOff"), .init(bit: 1, "lighting"), .init(bit: 2, "frequency")],
        attributes: [Attribute.currentLevel, Attribute.remainingTime, Attribute.minLevel, Attribute.maxLevel,
                     Attribute.options, Attribute.onOffTransitionTime, Attribute.onLevel, Attribute.onTransitionTime,
                     Attribute.offTransitionTime, Attribute.defaultMoveRate, Attribute.startUpCurrentLevel],
        commands: [Command.moveToLevel, Command.move, Command.step, Command.stop, Command.moveToLevelWithOnOff,
                   Command.moveWithOnOff, Command.stepWithOnOff, Command.stopWithOnOff])

    /// What happens when a transition ends.
    enum Ending: Sendable, Equatable {
        /// A client's command; `turnsOff` for a `…WithOnOff` command that ends at the minimum.
        case command(turnsOff: Bool)
        /// An Off fade or an off effect: keep lit until the end, then put back `restore` (OnLevel null).
        case fadeOut(restore: Int?)
    }

    /// One further leg of a multi-part effect.
    struct Leg: Sendable, Equatable {
        var to: Int
        var duration: Int64
    }

    struct Transition: Sendable, Equatable {
        var from: Int
        var to: Int
        var start: EngineInstant
        var duration: Int64
        var ending: Ending
        /// Further legs of a multi-part effect (DyingLight brightens, then fades).
        var legs: [Leg] = []
        var nextStep: EngineInstant
        var end: EngineInstant { start + duration }
        /// Matter never reports RemainingTime for transitions under a second.
        var reportsRemainingTime: Bool { duration >= 1000 }
    }

    /// How long a report of CurrentLevel must wait after the last one during a transition.
    static let quietInterval: Int64 = 1000

    public let isLighting: Bool
    public let hasOnOff: Bool
    public private(set) var currentLevel: Int?
    public private(set) var minLevel: Int
    public private(set) var maxLevel = 254
    public private(set) var options = 0
    public private(set) var onOffTransitionTime = 0
    public private(set) var onLevel: Int?
    public private(set) var onTransitionTime: Int?
    public private(set) var offTransitionTime: Int?
    public private(set) var defaultMoveRate: Int?
    public private(set) var startUpCurrentLevel: Int?
    private var transition: Transition?
    private var lastLevelReport = EngineInstant(milliseconds: .min / 2)
    /// The level OffWithEffect stored as the global scene, for OnWithRecallGlobalScene.
    private var globalSceneLevel: Int?

    public init(features: Set<String>) throws(HomeError) {
        for f in features where f != "onOff" && f != "lighting" {
            throw .constraintError("levelControl has no feature '\(f)'; its features are onOff and lighting")
        }
        isLighting = features.contains("lighting")
        hasOnOff = features.contains("onOff")
        minLevel = isLighting ? 1 : 0
    }

    public func remainingTime(at now: EngineInstant) -> Int {
        guard let t = transition else { return 0 }
        return Int((max(0, t.end - now) + 99) / 100)
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.currentLevel.id: currentLevel.map(Value.int) ?? .null
        case Attribute.remainingTime.id: isLighting ? .int(remainingTimeAtLastStep) : nil
        case Attribute.minLevel.id: .int(minLevel)
        case Attribute.maxLevel.id: .int(maxLevel)
        case Attribute.options.id: .int(options)
        case Attribute.onOffTransitionTime.id: .int(onOffTransitionTime)
        case Attribute.onLevel.id: onLevel.map(Value.int) ?? .null
        case Attribute.onTransitionTime.id: onTransitionTime.map(Value.int) ?? .null
        case Attribute.offTransitionTime.id: offTransitionTime.map(Value.int) ?? .null
        case Attribute.defaultMoveRate.id: defaultMoveRate.map(Value.int) ?? .null
        case Attribute.startUpCurrentLevel.id: isLighting ? startUpCurrentLevel.map(Value.int) ?? .null : nil
        default: nil
        }
    }

    /// RemainingTime as of the last step, so that a read is a pure function of state.
    private var remainingTimeAtLastStep = 0

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        let i = value.intValue
        switch attribute.id {
        case Attribute.currentLevel.id: currentLevel = i
        case Attribute.minLevel.id, Attribute.maxLevel.id:
            guard let i else { throw .constraintError("\(attribute.name) cannot be null") }
            let (lo, hi) = attribute.id == Attribute.minLevel.id ? (i, maxLevel) : (minLevel, i)
            guard lo < hi, !isLighting || lo >= 1 else {
                throw .constraintError(
                    "minLevel (\(lo)) must be below maxLevel (\(hi))\(isLighting ? " and at least 1" : "")")
            }
            (minLevel, maxLevel) = (lo, hi)
        case Attribute.options.id: options = i ?? 0
        case Attribute.onOffTransitionTime.id: onOffTransitionTime = i ?? 0
        case Attribute.onLevel.id:
            if let i, !(minLevel...maxLevel).contains(i) {
                throw .constraintError("onLevel \(i) is out of range; allowed: \(minLevel)…\(maxLevel) or null")
            }
            onLevel = i
        case Attribute.onTransitionTime.id: onTransitionTime = i
        case Attribute.offTransitionTime.id: offTransitionTime = i
        case Attribute.defaultMoveRate.id: defaultMoveRate = i
        case Attribute.startUpCurrentLevel.id: startUpCurrentLevel = i
        default: throw Self.unknownAttribute(attribute)
        }
    }

    public mutating func startUp(context: inout TraitContext) {
        // Matter: 0 → the minimum, null → as before, other → that level within the limits.
        // A light that has never run has no "before": it starts at full, which is what a user expects.
        switch isLighting ? startUpCurrentLevel : nil {
        case 0?: currentLevel = minLevel
        case let level?: currentLevel = level
        case nil: if currentLevel == nil && isLighting { currentLevel = maxLevel }
        }
        if let c = currentLevel { currentLevel = clamp(c) }
    }

    private func clamp(_ level: Int) -> Int { min(max(level, minLevel), maxLevel) }

    // MARK: Commands

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        let command = arguments.command
        let withOnOff = command.id >= 0x04
        // The order of Matter's reference server (connectedhomeip, src/app/clusters/level-control/
        // LevelControlCluster.cpp, LevelControlCluster::MoveCommand and ::StepCommand): the fields first (Rate 0,
        // StepSize 0: INVALID_COMMAND), then an undefined CurrentLevel (FAILURE), and only then the options
        // processing. So a bad request is refused whether the light is on or off.
        switch command.id {
        case Command.move.id, Command.moveWithOnOff.id:
            if (arguments["rate"].intValue ?? defaultMoveRate) == 0 {
                throw .invalidCommand("\(command.name).rate must be at least 1 (units per second)")
            }
            if currentLevel == nil { throw Self.undefinedLevel }
        case Command.step.id, Command.stepWithOnOff.id:
            if arguments.int("stepSize")! == 0 { throw .invalidCommand("\(command.name).stepSize must be at least 1") }
            if currentLevel == nil { throw Self.undefinedLevel }
        default:
            break
        }
        if !withOnOff && hasOnOff && context.output.onOff == false {
            // Options processing: OptionsOverride where OptionsMask is set, else the Options attribute.
            let mask = arguments.int("optionsMask")!, override = arguments.int("optionsOverride")!
            let effective = (override & mask) | (options & ~mask)
            if effective & 1 == 0 { return }  // ExecuteIfOff is clear: discarded, with success.
        }
        switch command.id {
        case Command.moveToLevel.id, Command.moveToLevelWithOnOff.id:
            let target = clamp(arguments.int("level")!)
            let tenths: Int? = arguments["transitionTime"].intValue ?? onOffTransitionTime
            if withOnOff && target > minLevel {
                context.post(.levelSetsOnOff(isOn: true, setsGlobalSceneControl: true))
            }
            guard let from = currentLevel else {
                // An undefined level jumps at once.
                begin(
                    from: target, to: target, duration: 0, ending: .command(turnsOff: withOnOff && target == minLevel),
                    context: &context)
                return
            }
            begin(from: from, to: target, duration: Int64(tenths ?? 0) * 100,
                  ending: .command(turnsOff: withOnOff && target == minLevel), context: &context)
        case Command.move.id, Command.moveWithOnOff.id:
            let up = arguments.int("moveMode")! == 0
            let rate = arguments["rate"].intValue ?? defaultMoveRate
            guard let from = currentLevel else { throw Self.undefinedLevel }
            let target = up ? maxLevel : minLevel
            if withOnOff && up { context.post(.levelSetsOnOff(isOn: true, setsGlobalSceneControl: false)) }
            let duration = rate.map { Int64(abs(target - from)) * 1000 / Int64($0) } ?? 0
            begin(from: from, to: target, duration: duration, ending: .command(turnsOff: withOnOff && !up),
                  context: &context)
        case Command.step.id, Command.stepWithOnOff.id:
            let up = arguments.int("stepMode")! == 0
            let size = arguments.int("stepSize")!
            guard let from = currentLevel else { throw Self.undefinedLevel }
            let target = clamp(up ? from + size : from - size)
            // A step cut short by a limit takes proportionally less time.
            let full = Int64(arguments["transitionTime"].intValue ?? 0) * 100
            let duration = full * Int64(abs(target - from)) / Int64(size)
            if withOnOff && up && target > minLevel {
                context.post(.levelSetsOnOff(isOn: true, setsGlobalSceneControl: false))
            }
            begin(
                from: from, to: target, duration: duration, ending: .command(turnsOff: withOnOff && target == minLevel),
                context: &context)
        case Command.stop.id, Command.stopWithOnOff.id:
            stop(context: &context)
        default:
            throw .unsupportedCommand("levelControl has no command \(command.name)")
        }
    }

    static let undefinedLevel = HomeError.failure(
        "currentLevel is undefined; send moveToLevel first to give the light a level")

    private mutating func stop(context: inout TraitContext) {
        guard let t = transition else { return }
        transition = nil
        if t.reportsRemainingTime { context.report(Attribute.remainingTime.id) }
        remainingTimeAtLastStep = 0
        context.report(Attribute.currentLevel.id)
        lastLevelReport = context.now
        coupleColorTemperature(final: true, context: &context)
    }

    /// Starts moving to `to`; a zero duration (or no change) applies at once and runs the ending.
    private mutating func begin(from: Int, to: Int, duration: Int64, ending: Ending,
                                legs: [Leg] = [], context: inout TraitContext) {
        let previousRemaining = remainingTimeAtLastStep
        let wasNull = currentLevel == nil
        let jumps = currentLevel != from
        currentLevel = from
        if jumps && duration > 0 && from != to { coupleColorTemperature(final: false, context: &context) }
        guard duration > 0, from != to else {
            transition = nil
            remainingTimeAtLastStep = 0
            if previousRemaining > 10 { context.report(Attribute.remainingTime.id) }
            setLevel(to, final: true, nullChanged: wasNull, context: &context)
            if !legs.isEmpty {
                var rest = legs
                let next = rest.removeFirst()
                begin(from: to, to: next.to, duration: next.duration, ending: ending, legs: rest, context: &context)
            } else {
                finish(ending, context: &context)
            }
            return
        }
        let t = Transition(from: from, to: to, start: context.now, duration: duration, ending: ending, legs: legs,
                           nextStep: context.now + min(context.stepInterval, duration))
        transition = t
        remainingTimeAtLastStep = remainingTime(at: context.now)
        if t.reportsRemainingTime && abs(remainingTimeAtLastStep - previousRemaining) > 10 {
            context.report(Attribute.remainingTime.id)
        }
        if wasNull { context.report(Attribute.currentLevel.id) }
    }

    private mutating func setLevel(_ level: Int, final: Bool, nullChanged: Bool = false, context: inout TraitContext) {
        let changed = currentLevel != level
        currentLevel = level
        if changed || final { coupleColorTemperature(final: final, context: &context) }
        if final || nullChanged || (changed && context.now - lastLevelReport >= Self.quietInterval) {
            context.report(Attribute.currentLevel.id)
            lastLevelReport = context.now
        }
    }

    /// Matter's CoupleColorTempToLevel (the Options attribute's bit 1, not a command's override, as connectedhomeip's
    /// level-control server reads it): ColorControl follows every change of CurrentLevel.
    private func coupleColorTemperature(final: Bool, context: inout TraitContext) {
        guard options & 2 != 0, let level = currentLevel else { return }
        context.post(.levelCouplesColorTemperature(level: level, final: final))
    }

    private mutating func finish(_ ending: Ending, context: inout TraitContext) {
        switch ending {
        case .command(let turnsOff):
            if turnsOff { context.post(.levelSetsOnOff(isOn: false, setsGlobalSceneControl: false)) }
        case .fadeOut(let restore):
            if let restore { setLevel(restore, final: true, context: &context) }
        }
    }

    // MARK: Timers

    public var nextDeadline: EngineInstant? { transition?.nextStep }

    public mutating func advance(context: inout TraitContext) {
        guard var t = transition, t.nextStep <= context.now else { return }
        let now = context.now
        if now >= t.end {
            transition = nil
            remainingTimeAtLastStep = 0
            if t.reportsRemainingTime { context.report(Attribute.remainingTime.id) }
            setLevel(t.to, final: t.legs.isEmpty, context: &context)
            if !t.legs.isEmpty {
                let next = t.legs.removeFirst()
                begin(from: t.to, to: next.to, duration: next.duration, ending: t.ending, legs: t.legs,
                      context: &context)
            } else {
                finish(t.ending, context: &context)
            }
            return
        }
        let elapsed = Double(now - t.start) / Double(t.duration)
        let level = t.from + Int((Double(t.to - t.from) * elapsed).rounded())
        setLevel(level, final: false, context: &context)
        remainingTimeAtLastStep = remainingTime(at: now)
        t.nextStep = min(now + context.stepInterval, t.end)
        transition = t
    }

    // MARK: Couplings with OnOff

    public mutating func receive(_ signal: EndpointSignal, context: inout TraitContext) {
        guard hasOnOff else { return }
        switch signal {
        case .onOffCommanded(isOn: true):
            // On: from the minimum up to OnLevel, or to the level the light had; an On during an Off
            // fade goes back to the level from before that Off.
            // During an Off fade the light is still lit: rise from where it is rather than dip to the minimum.
            var stored = currentLevel
            var from = minLevel
            if let t = transition {
                if case .fadeOut(let restore) = t.ending {
                    stored = restore ?? stored
                    from = currentLevel ?? minLevel
                } else {
                    stored = t.to
                }
            }
            let target = clamp(onLevel ?? stored ?? maxLevel)
            let tenths = onTransitionTime ?? onOffTransitionTime
            begin(from: from, to: target, duration: Int64(tenths) * 100, ending: .command(turnsOff: false),
                  context: &context)
        case .onOffCommanded(isOn: false):
            guard let from = currentLevel else { return }
            var stored = from
            if let t = transition, case .command = t.ending { stored = t.to }
            let tenths = offTransitionTime ?? onOffTransitionTime
            begin(from: from, to: minLevel, duration: Int64(tenths) * 100,
                  ending: .fadeOut(restore: onLevel == nil ? stored : nil), context: &context)
        case .offWithEffect(let identifier, let variant):
            guard let from = currentLevel else { return }
            globalSceneLevel = from
            let restore = onLevel == nil ? from : nil
            switch (identifier, variant) {
            case (0, 1):  // DelayedAllOff, NoFade
                begin(from: from, to: minLevel, duration: 0, ending: .fadeOut(restore: restore), context: &context)
            case (0, 2):  // DelayedAllOff, DelayedOffSlowFade: down 50 % in 0.8 s, then off in 12 s
                begin(from: from, to: clamp(from / 2), duration: 800, ending: .fadeOut(restore: restore),
                      legs: [Leg(to: minLevel, duration: 12_000)], context: &context)
            case (1, _):  // DyingLight: up 20 % in 0.5 s, then off in 1 s
                begin(from: from, to: clamp(from + from / 5), duration: 500, ending: .fadeOut(restore: restore),
                      legs: [Leg(to: minLevel, duration: 1000)], context: &context)
            default:  // DelayedAllOff, DelayedOffFastFade: off in 0.8 s
                begin(from: from, to: minLevel, duration: 800, ending: .fadeOut(restore: restore), context: &context)
            }
        case .recallGlobalScene:
            guard let level = globalSceneLevel else { return }
            begin(from: level, to: level, duration: 0, ending: .command(turnsOff: false), context: &context)
        case .levelSetsOnOff, .levelCouplesColorTemperature, .groupsRemoved, .recallScene:
            break
        }
    }

    public func render(into output: inout EndpointOutput) {
        output.level = currentLevel.map { UInt8(clamping: $0) }
        if let t = transition, case .fadeOut = t.ending { output.isFadingOut = true }
    }
}

extension LevelControlServer: SceneCapable {
    /// Matter: CurrentLevel has the S quality.
    public static var sceneAttributes: [UInt32] { [Attribute.currentLevel.id] }

    /// Moves to the stored level over the scene's transition, without OnOff's effect (OnOff recalls its own value in
    /// the same recall). A scene that turns an off light on fades it up from the minimum, as On does.
    public mutating func recall(_ values: [UInt32: Value], of scene: SceneRecall, context: inout TraitContext) {
        guard let level = values[Attribute.currentLevel.id]?.intValue else { return }
        let target = clamp(level)
        let turnsOn =
            scene.wasOn == false
            && scene.values[OnOffServer.descriptor.clusterID]?[OnOffServer.Attribute.onOff.id] == .bool(true)
        let from = turnsOn ? minLevel : (currentLevel ?? target)
        begin(from: from, to: target, duration: Int64(scene.transitionTime), ending: .command(turnsOff: false),
              context: &context)
    }
}

extension OutputKey where Value == UInt8 {
    /// LevelControl's current level.
    public static var level: Self { .init(cluster: 0x0008, field: 0) }
}

extension OutputKey where Value == Bool {
    /// LevelControl is fading the light out (after Off or an off effect).
    public static var isFadingOut: Self { .init(cluster: 0x0008, field: 1) }
}

extension EndpointOutput {
    /// LevelControl's current level (1…254 with Lighting); `nil` without LevelControl or while undefined.
    public var level: UInt8? {
        get { self[.level] }
        set { self[.level] = newValue }
    }

    /// LevelControl is fading the light out (after Off or an off effect): keep it lit meanwhile.
    public var isFadingOut: Bool {
        get { self[.isFadingOut] ?? false }
        // Only a fade is stored, so an output without one equals one that never had LevelControl's say.
        set { self[.isFadingOut] = newValue ? true : nil }
    }
}
