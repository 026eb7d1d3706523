// What the generated device types and traits (Generated/) are built from: protocols, the attribute wrapper, and
// the conversion of Swift values to the JSON the hub reads and back. Hand-written; the tables are generated.
//
// Every throwing call of the public API throws only `HomeError`, but is declared plain `throws`: with typed throws,
// Swift 6.3.1 crashes compiling the guides' own `catch let error as HomeError` (an "ownership error" in SILGen),
// and that pattern must work. Internally the library uses `throws(HomeError)`.

/// A device type (`OnOffLightDeviceType`, …): a typed view of one ``DynamicDeviceType``.
public protocol DeviceType: Sendable, Hashable {
    /// The hub's name for the type (`OnOffLight`).
    static var identifier: String { get }
    /// The Matter device type id (0x0100).
    static var deviceTypeID: UInt32 { get }
    var dynamic: DynamicDeviceType { get }
    init(_ dynamic: DynamicDeviceType)
}

extension DeviceType {
    public var metadata: DeviceTypeMetadata { dynamic.metadata }
    /// `traits[Matter.OnOffTrait.self]`, `traits.contains(Matter.LevelControlTrait.self)`.
    public var traits: DeviceTypeTraits { dynamic.traits }
    public static func == (a: Self, b: Self) -> Bool { a.dynamic == b.dynamic }
    public func hash(into hasher: inout Hasher) { hasher.combine(dynamic) }
}

/// A trait (`Matter.OnOffTrait`, …): a typed view of one ``DynamicTrait``.
public protocol Trait: Sendable, Hashable {
    /// The hub's name for the trait (`onOff`, `dev.hearth.simulatedSwitch`).
    static var identifier: String { get }
    /// The Matter cluster id (a maker's traits use the manufacturer-specific range).
    static var clusterID: UInt32 { get }
    var dynamic: DynamicTrait { get }
    init(_ dynamic: DynamicTrait)
}

extension Trait {
    public var metadata: TraitMetadata { dynamic.metadata }
    public static func == (a: Self, b: Self) -> Bool { a.dynamic == b.dynamic }
    public func hash(into hasher: inout Hasher) { hasher.combine(dynamic) }
}

/// One attribute of a trait (the Home APIs' `TraitAttribute`): `trait.attributes.onOff` is the value, always
/// optional; `trait.attributes.$onOff` tells why it may be nil.
///
/// nil with ``isSupported`` false: the device does not report it. nil with ``isSupported`` and ``isNullable``: a
/// real null (see the attribute's meaning: `onLevel` null means "the level the light had").
@propertyWrapper
public struct TraitAttribute<Value: HomeValue>: Sendable, Hashable {
    public let wrappedValue: Value?
    /// The device reports this attribute and gives a valid value.
    public let isSupported: Bool
    /// Null is a legal value (Matter's X quality).
    public let isNullable: Bool
    /// `update` may set it (the typed `update` has a setter for exactly these).
    public let isWritable: Bool

    public var projectedValue: TraitAttribute<Value> { self }

    public init(_ trait: DynamicTrait, _ name: String, nullable: Bool, writable: Bool) {
        let json = trait.value(name)
        wrappedValue = json.flatMap(Value.init(json:))
        isSupported = trait.json["attributeInfo"]?[name]?["supported"]?.boolValue ?? (json != nil)
        isNullable = trait.json["attributeInfo"]?[name]?["nullable"]?.boolValue ?? nullable
        isWritable = trait.json["attributeInfo"]?[name]?["writable"]?.boolValue ?? writable
    }
}

/// A value an attribute or a command field can hold, and how the hub writes it in JSON.
public protocol HomeValue: Sendable, Hashable {
    /// nil when the JSON is not a value of this type.
    init?(json: JSON)
    var json: JSON { get }
}

extension Bool: HomeValue {
    public init?(json: JSON) {
        guard case .bool(let b) = json else { return nil }
        self = b
    }
    public var json: JSON { .bool(self) }
}

extension String: HomeValue {
    public init?(json: JSON) {
        guard case .string(let s) = json else { return nil }
        self = s
    }
    public var json: JSON { .string(self) }
}

extension UInt8: HomeValue {}
extension UInt16: HomeValue {}
extension UInt32: HomeValue {}
extension Int16: HomeValue {}
extension Int64: HomeValue {}

extension UInt64: HomeValue {
    public init?(json: JSON) {
        guard case .int(let i) = json, let value = UInt64(exactly: i) else { return nil }
        self = value
    }
    /// The hub's uint64 values stay within 0…Int.max (what a JSON integer carries here); larger ones are clamped.
    public var json: JSON { .int(Int(clamping: self)) }
}

extension HomeValue where Self: FixedWidthInteger {
    public init?(json: JSON) {
        guard case .int(let i) = json, let value = Self(exactly: i) else { return nil }
        self = value
    }
    public var json: JSON { .int(Int(self)) }
}

/// A Matter list (Groups' `groupList`, a scene's extension field sets) is a JSON array.
extension Array: HomeValue where Element: HomeValue {
    public init?(json: JSON) {
        guard case .array(let items) = json else { return nil }
        var values: [Element] = []
        for item in items {
            guard let v = Element(json: item) else { return nil }
            values.append(v)
        }
        self = values
    }
    public var json: JSON { .array(map(\.json)) }
}

extension Optional where Wrapped: HomeValue {
    /// nil is JSON's null.
    var json: JSON { map(\.json) ?? .null }
}

/// A Matter enumeration: its cases have the hub's names (`StartUpOnOffEnum.toggle` is `"toggle"`).
public protocol HomeEnum: HomeValue, CaseIterable, RawRepresentable where RawValue == UInt8 {
    /// The hub's name of the case.
    var name: String { get }
}

extension HomeEnum {
    public init?(json: JSON) {
        switch json {
        case .string(let s):
            guard let value = Self.allCases.first(where: { $0.name == s }) else { return nil }
            self = value
        case .int(let i):
            guard let raw = UInt8(exactly: i), let value = Self(rawValue: raw) else { return nil }
            self = value
        default:
            return nil
        }
    }
    public var json: JSON { .string(name) }
}

/// A Matter bitmap as an `OptionSet` whose flags have the hub's names (`OptionsBitmap.executeIfOff`).
public protocol HomeBitmap: HomeValue, OptionSet where RawValue: FixedWidthInteger, Element == Self {
    static var flags: [(flag: Self, name: String)] { get }
}

extension HomeBitmap {
    public init?(json: JSON) {
        switch json {
        case .object(let members):
            var value = Self()
            for (name, on) in members {
                guard let flag = Self.flags.first(where: { $0.name == name })?.flag, let on = on.boolValue else {
                    return nil
                }
                if on { value.insert(flag) }
            }
            self = value
        case .int(let i):
            guard let raw = RawValue(exactly: i) else { return nil }
            self.init(rawValue: raw)
        default:
            return nil
        }
    }
    public var json: JSON { .object(Self.flags.map { (key: $0.name, value: JSON.bool(contains($0.flag))) }) }
}

/// The attributes an `update { … }` writes, in the order its setters were called (a second call for one attribute
/// replaces the first).
public struct AttributeWrites: Sendable {
    public private(set) var values: [(key: String, value: JSON)] = []

    public init() {}

    public mutating func set(_ attribute: String, _ value: JSON) {
        if let i = values.firstIndex(where: { $0.key == attribute }) {
            values[i].value = value
        } else {
            values.append((attribute, value))
        }
    }
}
