// The readers of what a browser sends that NIO does not parse: the session cookie, JSON bodies and the sign-in
// form. Each is a fuzz target (`web-cookie`, `web-body`): any bytes give a value or a typed error, never a crash.
public import HearthJSON
public import HearthModel

/// The `Cookie` request header (RFC 6265 §5.4: `name=value` pairs separated by `; `).
public enum CookieHeader {
    /// The value of the first cookie called `name` in `header`, if any; quotes around a value are removed. A pair
    /// without `=` is skipped, as browsers do.
    public static func value(named name: String, in header: String) -> String? {
        for pair in header.split(separator: ";", omittingEmptySubsequences: true) {
            guard let eq = pair.firstIndex(of: "=") else { continue }
            let key = pair[..<eq].trimmingSpaces
            guard key == name else { continue }
            var value = pair[pair.index(after: eq)...].trimmingSpaces
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return value
        }
        return nil
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// A JSON request body: one object, its members checked against what the endpoint takes.
public enum JSONBody {
    /// What a member must be.
    public enum Kind: Sendable { case string(maxLength: Int), object, any }

    /// The largest body any endpoint takes (a device request's limit, as over MQTT).
    public static let maximumSize = 64 * 1024

    /// Parses `bytes` as one JSON object with only the members of `fields` (those in `required` present); the
    /// error says which member is wrong and why.
    public static func object(_ bytes: [UInt8], fields: [String: Kind], required: Set<String> = [])
        throws(HomeError) -> [String: JSON] {
        guard bytes.count <= maximumSize else {
            throw HomeError(.resourceExhausted, "the body is \(bytes.count) bytes; at most \(maximumSize) are taken")
        }
        let json: JSON
        do throws(JSONParseError) { json = try JSON.parse(bytes) } catch {
            throw HomeError.invalidCommand("the body is not JSON: \(error)")
        }
        guard case .object(let members) = json else {
            throw HomeError.invalidCommand("the body is \(json.kind), not an object")
        }
        var out: [String: JSON] = [:]
        for (key, value) in members {
            guard let kind = fields[key] else {
                throw HomeError.invalidCommand(
                    "unknown member '\(key)'; this takes \(fields.keys.sorted().joined(separator: ", "))")
            }
            switch (kind, value) {
            case (.string(let maxLength), .string(let s)):
                guard s.count <= maxLength else {
                    throw HomeError.constraintError("'\(key)' is \(s.count) characters; at most \(maxLength)")
                }
            case (.object, .object), (.any, _): break
            case (.string, _): throw HomeError.invalidDataType("'\(key)' is \(value.kind), not a string")
            case (.object, _): throw HomeError.invalidDataType("'\(key)' is \(value.kind), not an object")
            }
            out[key] = value
        }
        for key in required.sorted() where out[key] == nil {
            throw HomeError.invalidCommand("'\(key)' is missing")
        }
        return out
    }
}

/// The sign-in form: `{"user":"admin","password":"…"}` (`user` defaults to `admin`).
public struct LoginForm: Sendable, Equatable {
    public var user: String
    public var password: String

    public static let maximumPasswordLength = 256

    public init(_ bytes: [UInt8]) throws(HomeError) {
        let m = try JSONBody.object(bytes, fields: ["user": .string(maxLength: 64),
                                                    "password": .string(maxLength: Self.maximumPasswordLength)],
                                    required: ["password"])
        if case .string(let u)? = m["user"] { user = u } else { user = "admin" }
        guard case .string(let p)? = m["password"] else { throw HomeError.invalidCommand("'password' is missing") }
        password = p
    }

    /// Why a new password cannot be used, or nil.
    public static func problem(withNewPassword password: String) -> String? {
        if password.count < 10 { return "a password has at least 10 characters" }
        if password.count > maximumPasswordLength {
            return "a password has at most \(maximumPasswordLength) characters"
        }
        return nil
    }

    /// Why a new account name cannot be used, or nil.
    public static func problem(withUserName name: String) -> String? {
        guard !name.isEmpty, name.count <= 32,
            name.unicodeScalars.allSatisfy({
                ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_"
            })
        else { return "a user name is 1 to 32 of a–z, 0–9, '-' and '_'" }
        return nil
    }
}
