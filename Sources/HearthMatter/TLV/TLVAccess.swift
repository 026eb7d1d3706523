// Typed access to TLV elements and a builder for them, so that message types encode and decode in a few lines: the
// optional accessors answer nil for another type, the throwing ones say which member is missing or mistyped.

extension TLVElement {
    /// The first member with `tag` of a structure or list; nil for other values or when there is none.
    public subscript(tag: TLVTag) -> TLVElement? {
        members?.first { $0.tag == tag }
    }

    /// The first member with context tag `context` of a structure or list.
    public subscript(context context: UInt8) -> TLVElement? { self[.context(context)] }

    /// The members of a structure, array or list.
    public var members: [TLVElement]? {
        switch value {
        case .structure(let m), .array(let m), .list(let m): m
        default: nil
        }
    }

    public var signedValue: Int64? { if case .signed(let v) = value { v } else { nil } }
    public var unsignedValue: UInt64? { if case .unsigned(let v) = value { v } else { nil } }
    public var boolValue: Bool? { if case .bool(let v) = value { v } else { nil } }
    public var floatValue: Float? { if case .float(let v) = value { v } else { nil } }
    public var doubleValue: Double? { if case .double(let v) = value { v } else { nil } }
    public var stringValue: String? { if case .utf8(let v) = value { v } else { nil } }
    public var bytesValue: [UInt8]? { if case .bytes(let v) = value { v } else { nil } }
    public var isNull: Bool { value == .null }
    public var structureMembers: [TLVElement]? { if case .structure(let m) = value { m } else { nil } }
    public var arrayMembers: [TLVElement]? { if case .array(let m) = value { m } else { nil } }
    public var listMembers: [TLVElement]? { if case .list(let m) = value { m } else { nil } }
}

/// A TLV element that does not have the shape a message expects: a member missing, of another type, out of range.
public struct TLVFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case missing
        case wrongType(expected: String, found: String)
        case outOfRange(String)
    }
    public var kind: Kind
    /// The tag of the member at fault (`.anonymous` for the element itself).
    public var tag: TLVTag

    public init(_ kind: Kind, tag: TLVTag) {
        self.kind = kind
        self.tag = tag
    }

    public var description: String {
        switch kind {
        case .missing: "TLV member \(tag) is missing"
        case .wrongType(let expected, let found): "TLV member \(tag) is a \(found), not a \(expected)"
        case .outOfRange(let what): "TLV member \(tag) is out of range: \(what)"
        }
    }
}

extension TLVElement {
    /// The member with context tag `context`, which must be there.
    public func field(_ context: UInt8) throws(TLVFieldError) -> TLVElement {
        guard let member = self[context: context] else { throw TLVFieldError(.missing, tag: .context(context)) }
        return member
    }

    /// The member with context tag `context`, or nil.
    public func optionalField(_ context: UInt8) -> TLVElement? { self[context: context] }

    /// An unsigned integer that fits `T`.
    public func unsigned<T: FixedWidthInteger & UnsignedInteger>(_ type: T.Type = T.self) throws(TLVFieldError) -> T {
        guard case .unsigned(let v) = value else { throw wrongType("unsigned integer") }
        guard let fitted = T(exactly: v) else {
            throw TLVFieldError(.outOfRange("\(v) does not fit \(T.self)"), tag: tag)
        }
        return fitted
    }

    /// A signed integer that fits `T`.
    public func signed<T: FixedWidthInteger & SignedInteger>(_ type: T.Type = T.self) throws(TLVFieldError) -> T {
        guard case .signed(let v) = value else { throw wrongType("signed integer") }
        guard let fitted = T(exactly: v) else {
            throw TLVFieldError(.outOfRange("\(v) does not fit \(T.self)"), tag: tag)
        }
        return fitted
    }

    public func bool() throws(TLVFieldError) -> Bool {
        guard case .bool(let v) = value else { throw wrongType("boolean") }
        return v
    }

    public func string() throws(TLVFieldError) -> String {
        guard case .utf8(let v) = value else { throw wrongType("UTF-8 string") }
        return v
    }

    /// An octet string, of `count` bytes when given (keys, nonces, random values have fixed lengths).
    public func bytes(count: Int? = nil) throws(TLVFieldError) -> [UInt8] {
        guard case .bytes(let v) = value else { throw wrongType("octet string") }
        if let count, v.count != count {
            throw TLVFieldError(.outOfRange("\(v.count) bytes, expected \(count)"), tag: tag)
        }
        return v
    }

    public func structure() throws(TLVFieldError) -> [TLVElement] {
        guard case .structure(let m) = value else { throw wrongType("structure") }
        return m
    }

    public func array() throws(TLVFieldError) -> [TLVElement] {
        guard case .array(let m) = value else { throw wrongType("array") }
        return m
    }

    public func list() throws(TLVFieldError) -> [TLVElement] {
        guard case .list(let m) = value else { throw wrongType("list") }
        return m
    }

    private func wrongType(_ expected: String) -> TLVFieldError {
        TLVFieldError(.wrongType(expected: expected, found: value.typeName), tag: tag)
    }
}

/// Builds the members of a structure, array or list from statements, `if` and `for` included.
@resultBuilder
public enum TLVMembersBuilder {
    public static func buildExpression(_ element: TLVElement) -> [TLVElement] { [element] }
    public static func buildExpression(_ element: TLVElement?) -> [TLVElement] { element.map { [$0] } ?? [] }
    public static func buildExpression(_ elements: [TLVElement]) -> [TLVElement] { elements }
    public static func buildBlock(_ parts: [TLVElement]...) -> [TLVElement] { parts.flatMap(\.self) }
    public static func buildOptional(_ part: [TLVElement]?) -> [TLVElement] { part ?? [] }
    public static func buildEither(first: [TLVElement]) -> [TLVElement] { first }
    public static func buildEither(second: [TLVElement]) -> [TLVElement] { second }
    public static func buildArray(_ parts: [[TLVElement]]) -> [TLVElement] { parts.flatMap(\.self) }
}

extension TLVElement {
    /// A structure: `TLVElement.structure { TLVElement(context: 1, .unsigned(5)) }`.
    public static func structure(tag: TLVTag = .anonymous, @TLVMembersBuilder _ members: () -> [TLVElement])
        -> TLVElement
    {
        TLVElement(tag: tag, .structure(members()))
    }

    public static func array(tag: TLVTag = .anonymous, @TLVMembersBuilder _ members: () -> [TLVElement]) -> TLVElement {
        TLVElement(tag: tag, .array(members()))
    }

    public static func list(tag: TLVTag = .anonymous, @TLVMembersBuilder _ members: () -> [TLVElement]) -> TLVElement {
        TLVElement(tag: tag, .list(members()))
    }
}

extension TLVValue {
    /// An unsigned value from any unsigned integer type.
    public static func uint(_ v: some FixedWidthInteger & UnsignedInteger) -> TLVValue { .unsigned(UInt64(v)) }
    /// A signed value from any signed integer type.
    public static func int(_ v: some FixedWidthInteger & SignedInteger) -> TLVValue { .signed(Int64(v)) }
}
