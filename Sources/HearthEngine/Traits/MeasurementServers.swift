public import HearthModel

/// The shape Matter's measurement clusters share: MeasuredValue (nullable, within Min…Max),
/// MinMeasuredValue, MaxMeasuredValue and an optional Tolerance; values arrive from hardware.
public protocol MeasurementServer: TraitServer {
    static var valueType: ValueType { get }
    /// The widest range the cluster allows for MeasuredValue.
    static var range: ClosedRange<Int> { get }
    var measurement: MeasurementState { get set }
    init()
}

/// The state of one measurement trait.
public struct MeasurementState: Sendable, Hashable {
    public var measuredValue: Int?
    public var minMeasuredValue: Int?
    public var maxMeasuredValue: Int?
    public var tolerance: Int?
}

extension MeasurementServer {
    public static func attributes(maximumTolerance: Int) -> [AttributeDescriptor] {
        [
            AttributeDescriptor(id: 0x0000, name: "measuredValue", type: valueType, nullable: true),
            AttributeDescriptor(id: 0x0001, name: "minMeasuredValue", type: valueType, nullable: true,
                                constraint: range.lowerBound...(range.upperBound - 1)),
            AttributeDescriptor(id: 0x0002, name: "maxMeasuredValue", type: valueType, nullable: true,
                                constraint: (range.lowerBound + 1)...range.upperBound),
            AttributeDescriptor(id: 0x0003, name: "tolerance", type: .uint16, constraint: 0...maximumTolerance),
        ]
    }

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.first { throw .constraintError("\(Self.descriptor.id) has no feature '\(f)'") }
        self.init()
    }

    public func read(_ id: UInt32) -> Value? {
        let m = measurement
        switch id {
        case 0x0000: return m.measuredValue.map(Value.int) ?? .null
        case 0x0001: return m.minMeasuredValue.map(Value.int) ?? .null
        case 0x0002: return m.maxMeasuredValue.map(Value.int) ?? .null
        case 0x0003: return m.tolerance.map(Value.int)
        default: return nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch attribute.id {
        case 0x0000: break  // a measurement is never restored: it is stale after a restart
        case 0x0001: measurement.minMeasuredValue = value.intValue
        case 0x0002: measurement.maxMeasuredValue = value.intValue
        case 0x0003: measurement.tolerance = value.intValue
        default: throw Self.unknownAttribute(attribute)
        }
        if let lo = measurement.minMeasuredValue, let hi = measurement.maxMeasuredValue, lo >= hi {
            throw .constraintError("minMeasuredValue (\(lo)) must be below maxMeasuredValue (\(hi))")
        }
    }

    /// The range a reading must fall in: the configured limits, else the cluster's.
    public var acceptedRange: ClosedRange<Int> {
        let lower = measurement.minMeasuredValue ?? Self.range.lowerBound
        return lower...(measurement.maxMeasuredValue ?? Self.range.upperBound)
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .measurement(let value) = input else {
            throw .invalidCommand("\(Self.descriptor.id) takes measurements, not \(input)")
        }
        switch value {
        case .null:
            measurement.measuredValue = nil
        case .int(let v):
            guard acceptedRange.contains(v) else {
                throw .constraintError(
                    "measuredValue \(v) is outside \(acceptedRange.lowerBound)…\(acceptedRange.upperBound)")
            }
            measurement.measuredValue = v
        default:
            throw .invalidDataType("measuredValue must be an integer or null, not \(value)")
        }
    }
}

/// Matter RelativeHumidityMeasurement (0x0405): MeasuredValue is 100 × %RH.
public struct RelativeHumidityMeasurementServer: MeasurementServer {
    public static let valueType = ValueType.uint16
    public static let range = 0...10_000
    public static let descriptor = TraitDescriptor(
        id: .relativeHumidityMeasurement, clusterID: 0x0405, revision: 3, attributes: attributes(maximumTolerance: 2048)
    )
    public var measurement = MeasurementState()
    public init() {}
}

/// Matter TemperatureMeasurement (0x0402): MeasuredValue is 100 × °C.
public struct TemperatureMeasurementServer: MeasurementServer {
    public static let valueType = ValueType.int16
    public static let range = -27_315...32_767
    public static let descriptor = TraitDescriptor(
        id: .temperatureMeasurement, clusterID: 0x0402, revision: 4, attributes: attributes(maximumTolerance: 2048))
    public var measurement = MeasurementState()
    public init() {}
}
