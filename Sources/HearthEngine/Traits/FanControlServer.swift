public import HearthModel

/// Matter Fan Control (0x0202, docs/clusters/fan-control.md) with the MultiSpeed (SPD) and Auto (AUT) features.
///
/// FanMode, PercentSetting and SpeedSetting are three views of one setting: writing any of them sets the others.
/// A fan has 1, 2 or 3 levels (FanModeSequence Off/High, Off/Low/High or Off/Low/Medium/High, each with Auto when the
/// feature is on): with MultiSpeed, as many as SpeedMax up to 3 (a fan on relay taps has one speed per tap); without,
/// three. A percentage falls in the level whose share of 100 it is in (1–33 low, 34–66 medium, 67–100 high), and
/// a level sets the top of its share (33, 66, 100), so each mode reads back as itself.
///
/// Auto hands the speed to a controller that reports it (PercentSetting and SpeedSetting go null, PercentCurrent shows
/// what the controller runs): only a fan with such a controller has the feature, so a plain fan never offers Auto.
public struct FanControlServer: TraitServer {
    public static let fanModeEnum = EnumType("FanModeEnum", [
        (0, "off"), (1, "low"), (2, "medium"), (3, "high"), (4, "on"), (5, "auto"), (6, "smart"),
    ])
    public static let fanModeSequenceEnum = EnumType("FanModeSequenceEnum", [
        (0, "offLowMedHigh"), (1, "offLowHigh"), (2, "offLowMedHighAuto"), (3, "offLowHighAuto"), (4, "offHighAuto"),
        (5, "offHigh"),
    ])

    public enum Attribute {
        public static let fanMode = AttributeDescriptor(
            id: 0x0000, name: "fanMode", type: .enumeration(fanModeEnum),
            writable: true, nonVolatile: true)
        public static let fanModeSequence = AttributeDescriptor(
            id: 0x0001, name: "fanModeSequence",
            type: .enumeration(fanModeSequenceEnum))
        public static let percentSetting = AttributeDescriptor(
            id: 0x0002, name: "percentSetting", type: .uint8,
            nullable: true, writable: true, nonVolatile: true,
            constraint: 0...100)
        public static let percentCurrent = AttributeDescriptor(
            id: 0x0003, name: "percentCurrent", type: .uint8,
            constraint: 0...100)
        public static let speedMax = AttributeDescriptor(
            id: 0x0004, name: "speedMax", type: .uint8, constraint: 1...100)
        public static let speedSetting = AttributeDescriptor(
            id: 0x0005, name: "speedSetting", type: .uint8,
            nullable: true, writable: true, nonVolatile: true,
            constraint: 0...100)
        public static let speedCurrent = AttributeDescriptor(
            id: 0x0006, name: "speedCurrent", type: .uint8,
            constraint: 0...100)
    }

    public static let descriptor = TraitDescriptor(
        id: .fanControl, clusterID: 0x0202, revision: 4,
        features: [
            .init(bit: 0, "multiSpeed"), .init(bit: 1, "auto"), .init(bit: 2, "rocking"), .init(bit: 3, "wind"),
            .init(bit: 4, "step"), .init(bit: 5, "airflowDirection"),
        ],
        attributes: [Attribute.fanMode, Attribute.fanModeSequence, Attribute.percentSetting, Attribute.percentCurrent,
                     Attribute.speedMax, Attribute.speedSetting, Attribute.speedCurrent])

    /// FanModeEnum's values.
    public enum Mode: Int, Sendable {
        case off = 0, low, medium, high, on, auto, smart
    }

    public static let features: Set<String> = ["multiSpeed", "auto"]

    public let isMultiSpeed: Bool
    public let hasAuto: Bool
    /// SpeedMax (MultiSpeed), else the 100 steps of a percentage.
    public private(set) var speedMax = 3
    public private(set) var fanMode = Mode.off
    /// nil in Auto.
    public private(set) var percentSetting: Int? = 0
    public private(set) var speedSetting: Int? = 0
    public private(set) var percentCurrent = 0
    public private(set) var speedCurrent = 0

    public init(features: Set<String>) throws(HomeError) {
        for f in features where !Self.features.contains(f) {
            throw .constraintError("fanControl has no feature '\(f)'; its features are multiSpeed and auto")
        }
        isMultiSpeed = features.contains("multiSpeed")
        hasAuto = features.contains("auto")
    }

    /// The steps a setting is counted in: SpeedMax, or 100 without MultiSpeed.
    private var steps: Int { isMultiSpeed ? speedMax : 100 }
    /// How many of low, medium and high the fan has.
    public var levels: Int { min(3, steps) }

    public var fanModeSequence: Int {
        switch (levels, hasAuto) {
        case (1, false): 5
        case (1, true): 4
        case (2, false): 1
        case (2, true): 3
        case (_, false): 0
        case (_, true): 2
        }
    }

    /// The modes this fan takes, in FanModeSequence's order (On is taken too, as High).
    public var modes: [Mode] {
        let named: [Mode] = switch levels { case 1: [.high]; case 2: [.low, .high]; default: [.low, .medium, .high] }
        return [.off] + named + (hasAuto ? [.auto] : [])
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.fanMode.id: .int(fanMode.rawValue)
        case Attribute.fanModeSequence.id: .int(fanModeSequence)
        case Attribute.percentSetting.id: percentSetting.map(Value.int) ?? .null
        case Attribute.percentCurrent.id: .int(percentCurrent)
        case Attribute.speedMax.id: isMultiSpeed ? .int(speedMax) : nil
        case Attribute.speedSetting.id: isMultiSpeed ? speedSetting.map(Value.int) ?? .null : nil
        case Attribute.speedCurrent.id: isMultiSpeed ? .int(speedCurrent) : nil
        default: nil
        }
    }

    /// Configured and saved values arrive one at a time in name order; `startUp` makes them agree.
    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        let i = value.intValue
        switch attribute.id {
        case Attribute.fanMode.id:
            guard let i, let mode = Mode(rawValue: i) else { throw .constraintError("fanMode \(value) is not a mode") }
            fanMode = mode
        case Attribute.percentSetting.id: percentSetting = i
        case Attribute.speedSetting.id: speedSetting = i
        case Attribute.speedMax.id:
            guard isMultiSpeed else { throw .unsupportedAttribute("speedMax needs the multiSpeed feature") }
            guard let i, (1...100).contains(i) else { throw .constraintError("speedMax must be 1…100") }
            speedMax = i
        default:
            throw .unsupportedAttribute("\(attribute.name) follows from the fan's setting; it cannot be set")
        }
    }

    /// After a restart the fan runs at the saved setting: Auto without a controller, or a mode this fan lacks,
    /// falls back to the nearest it has.
    public mutating func startUp(context: inout TraitContext) {
        if fanMode == .auto && hasAuto {
            percentSetting = nil
            speedSetting = nil
            return
        }
        if let p = percentSetting, fanMode != .auto {
            setPercent(min(100, max(0, p)))
        } else if fanMode == .auto || fanMode == .smart {
            setMode(.off)
        } else {
            setMode(fanMode)
        }
    }

    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        switch attribute.id {
        case Attribute.fanMode.id:
            guard let raw = value.intValue, let mode = Mode(rawValue: raw) else {
                throw .constraintError("fanMode \(value) is not a mode")
            }
            guard mode == .on || modes.contains(mode) else {
                throw .constraintError(
                    "this fan has no mode \(Self.fanModeEnum.name(of: raw) ?? "\(raw)"); its modes are "
                        + modes.map { Self.fanModeEnum.name(of: $0.rawValue) ?? "" }.joined(separator: ", "))
            }
            setMode(mode)
        case Attribute.percentSetting.id:
            // Matter: a null written here changes nothing and is refused.
            guard let p = value.intValue else { throw .invalidInState("percentSetting cannot be set to null") }
            setPercent(p)
        case Attribute.speedSetting.id:
            guard let s = value.intValue else { throw .invalidInState("speedSetting cannot be set to null") }
            guard s <= speedMax else { throw .constraintError("speedSetting \(s) is above speedMax (\(speedMax))") }
            setPercent(s * 100 / speedMax, speed: s)
        default:
            throw .unsupportedWrite("\(attribute.name) is read-only")
        }
    }

    /// A controller's speed while in Auto: `report(["percentCurrent": n])`.
    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .report(let values) = input, let p = values["percentCurrent"]?.intValue, values.count == 1 else {
            throw .invalidCommand("fanControl takes a report of percentCurrent, not \(input)")
        }
        guard (0...100).contains(p) else { throw .constraintError("percentCurrent \(p) is out of range 0…100") }
        guard fanMode == .auto else { throw .invalidInState("fanControl follows a controller only in auto") }
        percentCurrent = p
        speedCurrent = (p * steps + 99) / 100
    }

    private mutating func setMode(_ mode: Mode) {
        switch mode {
        case .off: setPercent(0)
        case .auto:
            fanMode = .auto
            percentSetting = nil
            speedSetting = nil
        default:
            let level: Int = switch (mode, levels) {
            case (.low, _): 1
            case (.medium, 3): 2
            case (.medium, _): levels  // not offered; the nearest level up
            default: levels  // high, on
            }
            let speed = max(1, level * steps / levels)
            setPercent(speed * 100 / steps, speed: isMultiSpeed ? speed : nil)
        }
    }

    /// Sets the percentage (and the speed it falls in, unless given), and the mode they are in.
    private mutating func setPercent(_ percent: Int, speed given: Int? = nil) {
        let speed = given ?? (percent * steps + 99) / 100
        percentSetting = percent
        speedSetting = isMultiSpeed ? speed : 0
        speedCurrent = speed
        // What the fan runs: a multi-speed fan runs its speed's share, a continuous one the percentage itself.
        percentCurrent = isMultiSpeed ? speed * 100 / steps : percent
        if speed == 0 {
            fanMode = .off
        } else {
            let level = (speed * levels + steps - 1) / steps
            fanMode = switch (levels, level) {
            case (3, 1), (2, 1): .low
            case (3, 2): .medium
            default: .high
            }
        }
    }

    public func render(into output: inout EndpointOutput) {
        output.fanPercent = UInt8(clamping: percentCurrent)
        output.fanSpeed = UInt8(clamping: speedCurrent)
    }
}

extension OutputKey where Value == UInt8 {
    /// What a fan should run at, 0 (off) … 100 %: PercentCurrent.
    public static var fanPercent: Self { .init(cluster: 0x0202, field: 0) }
    /// Which speed a multi-speed fan should run, 0 (off) … SpeedMax: SpeedCurrent (1…100 % without MultiSpeed).
    public static var fanSpeed: Self { .init(cluster: 0x0202, field: 1) }
}

extension EndpointOutput {
    /// What a fan should run at, 0 … 100 %; `nil` without FanControl.
    public var fanPercent: UInt8? {
        get { self[.fanPercent] }
        set { self[.fanPercent] = newValue }
    }

    /// Which speed (relay tap) a multi-speed fan should run, 0 for off; `nil` without FanControl.
    public var fanSpeed: UInt8? {
        get { self[.fanSpeed] }
        set { self[.fanSpeed] = newValue }
    }
}
