public import HearthModel

/// Matter Color Control (0x0300, revision 7) with the ColorTemperature feature only
/// (docs/clusters/color-control.md): a tunable-white light's colour temperature in mireds.
///
/// Temperatures move on the engine clock as LevelControl's levels do: the output is rendered every step while
/// ColorTemperatureMireds and RemainingTime are reported on Matter's quiet schedule. Commands go through the options
/// processing (ExecuteIfOff with OptionsMask/OptionsOverride) against the endpoint's OnOff. When LevelControl's
/// Options has CoupleColorTempToLevel, LevelControl posts every level change here and the temperature follows it
/// between the physical maximum (the lowest level, warmest) and CoupleColorTempToLevelMinMireds (level 254).
public struct ColorControlServer: TraitServer {
    public static let featureBitmap = BitmapType("Feature", [
        (0, "hueSaturation"), (1, "enhancedHue"), (2, "colorLoop"), (3, "xy"), (4, "colorTemperature"),
    ])
    public static let colorCapabilitiesBitmap = BitmapType("ColorCapabilitiesBitmap", [
        (0, "hueSaturation"), (1, "enhancedHue"), (2, "colorLoop"), (3, "xy"), (4, "colorTemperature"),
    ])
    public static let optionsBitmap = BitmapType("OptionsBitmap", [(0, "executeIfOff")])
    public static let colorModeEnum = EnumType("ColorModeEnum", [
        (0, "currentHueAndCurrentSaturation"), (1, "currentXAndCurrentY"), (2, "colorTemperatureMireds"),
    ])
    public static let enhancedColorModeEnum = EnumType("EnhancedColorModeEnum", [
        (0, "currentHueAndCurrentSaturation"), (1, "currentXAndCurrentY"), (2, "colorTemperatureMireds"),
        (3, "enhancedCurrentHueAndCurrentSaturation"),
    ])
    public static let moveModeEnum = EnumType("MoveModeEnum", [(0, "stop"), (1, "up"), (3, "down")])
    public static let stepModeEnum = EnumType("StepModeEnum", [(1, "up"), (3, "down")])

    /// Matter's largest mired value (65279 = 0xFEFF; 15.32 K).
    public static let maximumMireds = 0xFEFF
    /// ColorMode and EnhancedColorMode: the only mode of a ColorTemperature-only light.
    static let colorTemperatureMode = 2
    /// Bit 4 of FeatureMap and ColorCapabilities.
    static let colorTemperatureBit = 1 << 4

    public enum Attribute {
        public static let remainingTime = AttributeDescriptor(id: 0x0002, name: "remainingTime", type: .uint16,
                                                              changedByCommands: true, quiet: true,
                                                              constraint: 0...0xFFFE)
        public static let colorTemperatureMireds = AttributeDescriptor(
            id: 0x0007, name: "colorTemperatureMireds", type: .uint16, changedByCommands: true, nonVolatile: true,
            quiet: true, constraint: 0...maximumMireds)
        public static let colorMode = AttributeDescriptor(
            id: 0x0008, name: "colorMode", type: .enumeration(colorModeEnum))
        public static let options = AttributeDescriptor(
            id: 0x000F, name: "options", type: .bitmap(optionsBitmap),
            writable: true, nonVolatile: true)
        public static let numberOfPrimaries = AttributeDescriptor(
            id: 0x0010, name: "numberOfPrimaries", type: .uint8,
            nullable: true, constraint: 0...6)
        public static let enhancedColorMode = AttributeDescriptor(
            id: 0x4001, name: "enhancedColorMode",
            type: .enumeration(enhancedColorModeEnum))
        public static let colorCapabilities = AttributeDescriptor(
            id: 0x400A, name: "colorCapabilities",
            type: .bitmap(colorCapabilitiesBitmap))
        public static let colorTempPhysicalMinMireds = AttributeDescriptor(
            id: 0x400B, name: "colorTempPhysicalMinMireds", type: .uint16, constraint: 1...maximumMireds)
        public static let colorTempPhysicalMaxMireds = AttributeDescriptor(
            id: 0x400C, name: "colorTempPhysicalMaxMireds", type: .uint16, constraint: 1...maximumMireds)
        public static let coupleColorTempToLevelMinMireds = AttributeDescriptor(
            id: 0x400D, name: "coupleColorTempToLevelMinMireds", type: .uint16, constraint: 1...maximumMireds)
        public static let startUpColorTemperatureMireds = AttributeDescriptor(
            id: 0x4010, name: "startUpColorTemperatureMireds", type: .uint16, nullable: true, writable: true,
            nonVolatile: true, constraint: 1...maximumMireds)
        public static let featureMap = AttributeDescriptor(id: 0xFFFC, name: "featureMap", type: .bitmap(featureBitmap))
    }

    static let optionsFields = [
        FieldDescriptor("optionsMask", .bitmap(optionsBitmap), default: .int(0)),
        FieldDescriptor("optionsOverride", .bitmap(optionsBitmap), default: .int(0)),
    ]
    /// The per-command bounds of Move and Step: 0 (or left out) is the physical limit.
    static let boundFields = [
        FieldDescriptor("colorTemperatureMinimumMireds", .uint16, default: .int(0), constraint: 0...maximumMireds),
        FieldDescriptor("colorTemperatureMaximumMireds", .uint16, default: .int(0), constraint: 0...maximumMireds),
    ]

    public enum Command {
        public static let moveToColorTemperature = CommandDescriptor(id: 0x0A, name: "moveToColorTemperature", fields: [
            FieldDescriptor("colorTemperatureMireds", .uint16, constraint: 0...maximumMireds),
            // Left out: 0, at once.
            FieldDescriptor("transitionTime", .uint16, default: .int(0), constraint: 0...0xFFFE),
        ] + optionsFields)
        public static let stopMoveStep = CommandDescriptor(id: 0x47, name: "stopMoveStep", fields: optionsFields)
        public static let moveColorTemperature = CommandDescriptor(id: 0x4B, name: "moveColorTemperature", fields: [
            FieldDescriptor("moveMode", .enumeration(moveModeEnum)),
            FieldDescriptor("rate", .uint16),
        ] + boundFields + optionsFields)
        public static let stepColorTemperature = CommandDescriptor(id: 0x4C, name: "stepColorTemperature", fields: [
            FieldDescriptor("stepMode", .enumeration(stepModeEnum)),
            FieldDescriptor("stepSize", .uint16),
            FieldDescriptor("transitionTime", .uint16, default: .int(0), constraint: 0...0xFFFE),
        ] + boundFields + optionsFields)
    }

    public static let listensToSignals = true

    public static let descriptor = TraitDescriptor(
        id: .colorControl, clusterID: 0x0300, revision: 7,
        features: [
            .init(bit: 0, "hueSaturation"), .init(bit: 1, "enhancedHue"), .init(bit: 2, "colorLoop"),
            .init(bit: 3, "xy"), .init(bit: 4, "colorTemperature"),
        ],
        attributes: [Attribute.remainingTime, Attribute.colorTemperatureMireds, Attribute.colorMode, Attribute.options,
                     Attribute.numberOfPrimaries, Attribute.enhancedColorMode, Attribute.colorCapabilities,
                     Attribute.colorTempPhysicalMinMireds, Attribute.colorTempPhysicalMaxMireds,
                     Attribute.coupleColorTempToLevelMinMireds, Attribute.startUpColorTemperatureMireds,
                     Attribute.featureMap],
        commands: [Command.moveToColorTemperature, Command.stopMoveStep, Command.moveColorTemperature,
                   Command.stepColorTemperature])

    /// The features Hearth implements.
    public static let features = ["colorTemperature"]

    /// A common CCT strip (6500 K cold white, 2700 K warm white), for a colorControl without a binding's range.
    public static let defaultPhysicalRange = 153...370
    /// Matter's default ColorTemperatureMireds (4000 K).
    static let defaultMireds = 250

    struct Transition: Sendable, Equatable {
        var from: Int
        var to: Int
        var start: EngineInstant
        var duration: Int64
        var nextStep: EngineInstant
        var end: EngineInstant { start + duration }
        /// Matter never reports RemainingTime for transitions under a second.
        var reportsRemainingTime: Bool { duration >= 1000 }
    }

    /// How long a report of ColorTemperatureMireds must wait after the last one during a transition.
    static let quietInterval: Int64 = 1000

    public private(set) var physicalMin = defaultPhysicalRange.lowerBound
    public private(set) var physicalMax = defaultPhysicalRange.upperBound
    /// Configured CoupleColorTempToLevelMinMireds; nil: the physical minimum.
    private var configuredCoupleMin: Int?
    /// ColorTemperatureMireds configured or saved; nil until then (start-up picks a value in the range).
    public private(set) var mireds: Int?
    public private(set) var options = 0
    public private(set) var startUpMireds: Int?
    private var transition: Transition?
    private var lastReport = EngineInstant(milliseconds: .min / 2)
    /// RemainingTime as of the last step, so that a read is a pure function of state.
    private var remainingTimeAtLastStep = 0

    public var coupleMin: Int { configuredCoupleMin ?? physicalMin }
    /// The current colour temperature: what was configured or saved, clipped to the physical range.
    public var colorTemperatureMireds: Int { clamp(mireds ?? Self.startingMireds(physicalMin, physicalMax)) }

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.subtracting(Self.features).sorted().first {
            throw .constraintError("colorControl has no feature '\(f)' in Hearth; it implements only colorTemperature")
        }
        guard features.contains("colorTemperature") else {
            throw .constraintError("colorControl needs the colorTemperature feature (the only one Hearth implements)")
        }
    }

    static func startingMireds(_ lo: Int, _ hi: Int) -> Int {
        (lo...hi).contains(defaultMireds) ? defaultMireds : (lo + hi) / 2
    }

    private func clamp(_ m: Int) -> Int { min(max(m, physicalMin), physicalMax) }

    public func remainingTime(at now: EngineInstant) -> Int {
        guard let t = transition else { return 0 }
        return Int((max(0, t.end - now) + 99) / 100)
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.remainingTime.id: .int(remainingTimeAtLastStep)
        case Attribute.colorTemperatureMireds.id: .int(colorTemperatureMireds)
        case Attribute.colorMode.id, Attribute.enhancedColorMode.id: .int(Self.colorTemperatureMode)
        case Attribute.options.id: .int(options)
        case Attribute.numberOfPrimaries.id: .null
        case Attribute.colorCapabilities.id, Attribute.featureMap.id: .int(Self.colorTemperatureBit)
        case Attribute.colorTempPhysicalMinMireds.id: .int(physicalMin)
        case Attribute.colorTempPhysicalMaxMireds.id: .int(physicalMax)
        case Attribute.coupleColorTempToLevelMinMireds.id: .int(coupleMin)
        case Attribute.startUpColorTemperatureMireds.id: startUpMireds.map(Value.int) ?? .null
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        let i = value.intValue
        switch attribute.id {
        // The range's own order is checked by `checkConfiguration`, once both ends are loaded.
        case Attribute.colorTempPhysicalMinMireds.id: physicalMin = i ?? physicalMin
        case Attribute.colorTempPhysicalMaxMireds.id: physicalMax = i ?? physicalMax
        case Attribute.coupleColorTempToLevelMinMireds.id: configuredCoupleMin = i
        case Attribute.colorTemperatureMireds.id: mireds = i
        case Attribute.options.id: options = i ?? 0
        case Attribute.startUpColorTemperatureMireds.id: startUpMireds = i
        case Attribute.numberOfPrimaries.id:
            guard value.isNull else {
                throw .constraintError("numberOfPrimaries can only be null in Hearth: it does not describe the LEDs' "
                                       + "primaries (their x, y and intensity attributes)")
            }
        default:
            throw .unsupportedAttribute("colorControl.\(attribute.name) is not configurable: "
                                        + "it follows from the colorTemperature feature")
        }
    }

    public func checkConfiguration() throws(HomeError) {
        guard physicalMin < physicalMax else {
            throw .constraintError(
                "colorTempPhysicalMinMireds (\(physicalMin)) must be below colorTempPhysicalMaxMireds "
                    + "(\(physicalMax)): the coldest white has the fewest mireds")
        }
        if let c = configuredCoupleMin, !(physicalMin...physicalMax).contains(c) {
            throw .constraintError("coupleColorTempToLevelMinMireds \(c) is outside the physical range "
                                   + "\(physicalMin)…\(physicalMax) (colorTempPhysicalMinMireds…MaxMireds)")
        }
    }

    public mutating func startUp(context: inout TraitContext) {
        // Matter: a value sets ColorTemperatureMireds, null keeps the previous one; the reference server also keeps
        // it for a value outside the physical range. ColorMode is always ColorTemperatureMireds here.
        if let s = startUpMireds, (physicalMin...physicalMax).contains(s) { mireds = s }
        mireds = colorTemperatureMireds
    }

    // MARK: Commands

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        let command = arguments.command
        // The reference server's order: the command's own fields, then the options processing.
        switch command.id {
        case Command.moveColorTemperature.id:
            if arguments.int("moveMode")! != 0 && arguments.int("rate")! == 0 {
                throw .invalidCommand(
                    "moveColorTemperature.rate must be at least 1 (mireds per second) to move up or down")
            }
        case Command.stepColorTemperature.id:
            if arguments.int("stepSize")! == 0 {
                throw .invalidCommand("stepColorTemperature.stepSize must be at least 1 (mireds)")
            }
        default:
            break
        }
        if context.output.onOff == false {
            // Options processing: OptionsOverride where OptionsMask is set, else the Options attribute.
            let mask = arguments.int("optionsMask")!, override = arguments.int("optionsOverride")!
            let effective = (override & mask) | (options & ~mask)
            if effective & 1 == 0 { return }  // ExecuteIfOff is clear: discarded, with success.
        }
        let current = colorTemperatureMireds
        switch command.id {
        case Command.moveToColorTemperature.id:
            let target = clamp(arguments.int("colorTemperatureMireds")!)
            begin(from: current, to: target, duration: Int64(arguments.int("transitionTime")!) * 100, context: &context)
        case Command.moveColorTemperature.id:
            let mode = arguments.int("moveMode")!
            guard mode != 0 else { return stop(context: &context) }
            let (lower, upper) = bounds(arguments)
            // Up goes to the upper bound, Down to the lower one; a bound already behind the light does not move it.
            let target = mode == 1 ? max(current, upper) : min(current, lower)
            let rate = Int64(arguments.int("rate")!)
            begin(from: current, to: target, duration: Int64(abs(target - current)) * 1000 / rate, context: &context)
        case Command.stepColorTemperature.id:
            let up = arguments.int("stepMode")! == 1
            let size = arguments.int("stepSize")!
            let (lower, upper) = bounds(arguments)
            let target = up ? max(current, min(current + size, upper)) : min(current, max(current - size, lower))
            // A step cut short by a bound takes proportionally less time.
            let full = Int64(arguments.int("transitionTime")!) * 100
            begin(from: current, to: target, duration: full * Int64(abs(target - current)) / Int64(size),
                  context: &context)
        case Command.stopMoveStep.id:
            stop(context: &context)
        default:
            throw .unsupportedCommand("colorControl has no command \(command.name)")
        }
    }

    /// A Move or Step command's bounds: 0 is the physical limit, and no bound reaches beyond it.
    private func bounds(_ arguments: CommandArguments) -> (lower: Int, upper: Int) {
        let lo = arguments.int("colorTemperatureMinimumMireds")!, hi = arguments.int("colorTemperatureMaximumMireds")!
        return (lo == 0 ? physicalMin : clamp(lo), hi == 0 ? physicalMax : clamp(hi))
    }

    private mutating func stop(context: inout TraitContext) {
        guard let t = transition else { return }
        transition = nil
        if t.reportsRemainingTime { context.report(Attribute.remainingTime.id) }
        remainingTimeAtLastStep = 0
        context.report(Attribute.colorTemperatureMireds.id)
        lastReport = context.now
    }

    /// Starts moving to `to`; a zero duration (or no change) applies at once. Any running transition ends first.
    private mutating func begin(from: Int, to: Int, duration: Int64, context: inout TraitContext) {
        let previousRemaining = remainingTimeAtLastStep
        let replaced = transition
        guard duration > 0, from != to else {
            transition = nil
            remainingTimeAtLastStep = 0
            // RemainingTime is reported when it reaches 0, except for transitions under a second.
            if replaced?.reportsRemainingTime == true && previousRemaining > 0 {
                context.report(Attribute.remainingTime.id)
            }
            setMireds(to, final: true, context: &context)
            return
        }
        let t = Transition(from: from, to: to, start: context.now, duration: duration,
                           nextStep: context.now + min(context.stepInterval, duration))
        transition = t
        // Clients know the starting value: the first report of the move waits a second from here.
        lastReport = context.now
        remainingTimeAtLastStep = remainingTime(at: context.now)
        if t.reportsRemainingTime && abs(remainingTimeAtLastStep - previousRemaining) > 10 {
            context.report(Attribute.remainingTime.id)
        }
    }

    private mutating func setMireds(_ value: Int, final: Bool, context: inout TraitContext) {
        let changed = mireds != value
        mireds = value
        if final || (changed && context.now - lastReport >= Self.quietInterval) {
            context.report(Attribute.colorTemperatureMireds.id)
            lastReport = context.now
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
            setMireds(t.to, final: true, context: &context)
            return
        }
        let elapsed = Double(now - t.start) / Double(t.duration)
        setMireds(t.from + Int((Double(t.to - t.from) * elapsed).rounded()), final: false, context: &context)
        remainingTimeAtLastStep = remainingTime(at: now)
        t.nextStep = min(now + context.stepInterval, t.end)
        transition = t
    }

    // MARK: Coupling with LevelControl

    /// The temperature a level gives when coupled: the physical maximum (warmest) at the lowest level, falling in a
    /// straight line to CoupleColorTempToLevelMinMireds at level 254, like an incandescent lamp that reddens as it
    /// dims.
    public func coupledMireds(level: Int) -> Int {
        let l = min(max(level, 1), 254)
        return physicalMax - Int((Double((physicalMax - coupleMin) * (l - 1)) / 253).rounded())
    }

    public mutating func receive(_ signal: EndpointSignal, context: inout TraitContext) {
        guard case .levelCouplesColorTemperature(let level, let final) = signal else { return }
        // At once, as the reference server does (MoveToColorTemperature with no transition), stopping any own move.
        if let t = transition {
            transition = nil
            remainingTimeAtLastStep = 0
            if t.reportsRemainingTime { context.report(Attribute.remainingTime.id) }
        }
        setMireds(coupledMireds(level: level), final: final, context: &context)
    }

    public func render(into output: inout EndpointOutput) {
        output.colorTemperatureMireds = UInt16(clamping: colorTemperatureMireds)
    }
}

extension ColorControlServer: SceneCapable {
    /// Matter: ColorTemperatureMireds has the S quality (with the ColorTemperature feature, the only colour attribute
    /// a scene of this light stores; the colour mode is always colour temperature).
    public static var sceneAttributes: [UInt32] { [Attribute.colorTemperatureMireds.id] }

    /// Moves to the stored temperature over the scene's transition, as MoveToColorTemperature would (clamped to the
    /// physical range, which may have changed since the scene was stored).
    public mutating func recall(_ values: [UInt32: Value], of scene: SceneRecall, context: inout TraitContext) {
        guard let mireds = values[Attribute.colorTemperatureMireds.id]?.intValue else { return }
        begin(from: colorTemperatureMireds, to: clamp(mireds), duration: Int64(scene.transitionTime), context: &context)
    }
}

extension OutputKey where Value == UInt16 {
    /// ColorControl's ColorTemperatureMireds.
    public static var colorTemperatureMireds: Self { .init(cluster: 0x0300, field: 0) }
}

extension EndpointOutput {
    /// ColorControl's ColorTemperatureMireds; `nil` without ColorControl.
    public var colorTemperatureMireds: UInt16? {
        get { self[.colorTemperatureMireds] }
        set { self[.colorTemperatureMireds] = newValue }
    }
}
