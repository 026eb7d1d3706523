import HearthJSON
import HearthEngine
import HearthModel

/// Writes a device's summary (the entries of `…/devices` and of the whole home, `docs/mqtt-api.md`) straight to bytes
/// from a `DeviceView`.
///
/// Every (re)connection writes the summary of every device twice (the device summary and the whole home), and every
/// change of a name, a room or a connectivity writes them again; through a `HomeDevice` snapshot — every value of
/// every trait copied, then a `JSON` tree built and freed — a 1,000-device hub spent 160 M instructions of its
/// start-up on them (callgrind, docs/benchmarks.md) for entries of about 260 bytes. The output is byte for byte
/// `DeviceDocument.summary(device, hub:).bytes` (tests hold it to that).
enum SummaryWriter {
    /// Appends the summary of `d`; with `hub`, the whole home's entry for a device of this hub.
    static func write(_ d: DeviceView, hub: String? = nil, to out: inout [UInt8]) {
        DocumentWriter.raw(#"{"id":"#, &out); JSON.writeString(d.id, to: &out)
        DocumentWriter.raw(#","name":"#, &out); JSON.writeString(d.name, to: &out)
        DocumentWriter.raw(#","structureId":"#, &out); DocumentWriter.optional(d.structureID, &out)
        DocumentWriter.raw(#","roomId":"#, &out); DocumentWriter.optional(d.roomID, &out)
        DocumentWriter.raw(#","isMatterDevice":"#, &out); DocumentWriter.raw(d.isMatterDevice ? "true" : "false", &out)
        if let hub { DocumentWriter.raw(#","hub":"#, &out); JSON.writeString(hub, to: &out) }
        DocumentWriter.raw(#","types":["#, &out)
        for t in 0..<d.typeCount {
            if t > 0 { DocumentWriter.raw(",", &out) }
            let type = d.type(t)
            DocumentWriter.raw(#"{"type":"#, &out); JSON.writeString(type.descriptor.name, to: &out)
            DocumentWriter.raw(#","deviceTypeId":"#, &out); JSON.writeInt(Int(type.descriptor.id), to: &out)
            DocumentWriter.raw(#","isPrimaryType":"#, &out);
            DocumentWriter.raw(type.isPrimaryType ? "true" : "false", &out)
            DocumentWriter.raw("}", &out)
        }
        DocumentWriter.raw(#"],"sourceConnectivity":"#, &out)
        DocumentWriter.connectivity(d.sourceConnectivity, &out)
        DocumentWriter.raw("}", &out)
    }

    /// The device summary (`…/devices`): every device of the home, in configuration order.
    static func summaries(of home: Home) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        var first = true
        home.forEachView { d in
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            write(d, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return out
    }
}
