/// Ids as Home Assistant needs them: a discovery topic's object id and a unique id from a hub id, a device id
/// and an entity key.
///
/// Hub and device ids may hold any character but `/`, `+` and `#`, and an object id only `[A-Za-z0-9_-]`, so each
/// id is encoded: letters, digits and `-` stay, every other byte (`_` too) becomes `_` and two lowercase hex
/// digits. The parts are joined with `__`, which no encoded part contains (an encoded `_` is always followed by
/// two hex digits), so two different (hub, device) pairs never give the same id: hub `a_b` with device `c`
/// (`hearth_a_5fb__c`) and hub `a` with device `b_c` (`hearth_a__b_5fc`) stay apart. Ids made of letters, digits
/// and `-`, as host names and the usual device ids are, read as they are: `hearth_pi__kitchen-lamp__light`.
public enum ObjectID {
    public static func encode(_ id: String) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "_"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `hearth_<hub>`: the hub's own device in Home Assistant.
    public static func hub(_ hub: String) -> String { "hearth_" + encode(hub) }

    /// `hearth_<hub>__<device>`: a device's identifier and its discovery topic's object id.
    public static func device(hub: String, device: String) -> String { Self.hub(hub) + "__" + encode(device) }

    /// `hearth_<hub>__<device>__<entity>`: an entity's unique id; `entity` is one of this target's keys
    /// (`[a-z0-9_-]`), stable across restarts and renames because it is made of ids, never of names.
    public static func entity(hub: String, device: String, entity: String) -> String {
        Self.device(hub: hub, device: device) + "__" + entity
    }

    /// The encoded device id of an object id of `hub`'s devices, or nil when the object id is not one of them.
    public static func encodedDevice(inObjectID objectID: String, hub: String) -> Substring? {
        let prefix = Self.hub(hub) + "__"
        guard objectID.hasPrefix(prefix) else { return nil }
        let rest = objectID.dropFirst(prefix.count)
        return rest.isEmpty || rest.contains("__") ? nil : rest
    }
}
