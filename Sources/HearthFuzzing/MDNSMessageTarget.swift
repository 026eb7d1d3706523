import HearthMatter

/// A Multicast DNS packet as the responder takes it from the network. The codec's promises: it throws or reads a
/// message, and the message written back reads as the same message; the responder's: whatever arrives, on the mDNS
/// port or from a one-shot resolver's, it answers with at most one packet that fits a frame and reads back, and its
/// services are what they were.
enum MDNSMessageTarget {
    static let service = MatterServiceNames.commissionable(
        instance: "DD200C20D25AE5F7", discriminator: 3840, vendorID: 0xFFF1, productID: 0x8000, deviceType: 14,
        deviceName: "Hearth", commissioningMode: .basic)

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        if let message = try? DNSMessage(decoding: bytes) {
            let written = message.encoded()
            if written.count <= DNSMessage.maximumLength {
                let back: DNSMessage
                do { back = try DNSMessage(decoding: written) } catch {
                    throw FuzzFailure(
                        "a message read from \(shown(bytes)) was written as \(shown(written)), which reads as: \(error)"
                    )
                }
                try require(back == message, "\(shown(bytes)) read as \(message), written and read back as \(back)")
            }
        }

        let interface = MDNSInterface(
            name: "eth0", ipv4: [[10, 0, 0, 2]], ipv6: [[0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [2]])
        guard var core = try? MDNSResponderCore(hostLabel: "001122334455", interfaces: [interface]),
              (try? core.advertise(service, now: 0)) != nil
        else { throw FuzzFailure("the responder does not start") }
        let before = core.services
        for port in [5353, 40_000] {
            let packets = core.receive(
                bytes, from: MDNSQuerySource(interface: "eth0", family: .ipv4, port: port), now: 10_000)
            try require(
                packets.count <= 1, "\(shown(bytes)) from port \(port) was answered with \(packets.count) packets")
            for packet in packets {
                let written = packet.message.encoded()
                try require(written.count <= 1440, "an answer of \(written.count) bytes to \(shown(bytes))")
                try require(
                    (try? DNSMessage(decoding: written)) == packet.message,
                    "an answer that does not read back: \(shown(written))")
                try require(port == 5353 || packet.destination == .querier, "a one-shot query answered by multicast")
            }
        }
        try require(core.services == before, "\(shown(bytes)) changed the services")
    }
}
