import Dispatch
import Foundation
import HearthMatter
import HearthTestKit
import Testing

/// Whether python3-zeroconf is installed for the system's Python.
let zeroconfAvailable: Bool = {
    guard FileManager.default.isExecutableFile(atPath: MDNSNamespaceTests.python) else { return false }
    let probe = try? MDNSNamespaceTests.runToExit(
        MDNSNamespaceTests.python, ["-c", "import zeroconf"], timeout: .seconds(30))
    return probe?.status == 0
}()

/// The responder on a real link: it runs on the host's end of a veth pair the test creates, a browser
/// (python3-zeroconf, a DNS-SD implementation of its own) in the network namespace at the other end finds the
/// commissionable node by its discriminator's subtype, as a Matter controller does, and resolves its SRV, TXT and
/// address. Then the same with a second mDNS responder on the same host and port — avahi-daemon, as on Raspberry Pi
/// OS, or python3-zeroconf's when avahi is not installed — whose service the browser must find as well.
@Suite(.serialized, .timeLimit(.minutes(3)),
       .enabled(if: geteuid() == 0, "network namespaces need root"),
       .enabled(if: zeroconfAvailable, "python3-zeroconf is missing (scripts/setup installs it)"))
struct MDNSNamespaceTests {
    static let python = "/usr/bin/python3"

    static let service = MatterServiceNames.commissionable(
        instance: "DD200C20D25AE5F7", discriminator: 3840, vendorID: 0xFFF1, productID: 0x8000, deviceType: 14,
        deviceName: "Hearth test", commissioningMode: .basic, session: .init(idleInterval: 500, activeInterval: 300))

    @Test func aBrowserAcrossTheLinkFindsTheNodeByDiscriminatorAndResolvesIt() async throws {
        let namespace = try NetworkNamespace()
        let responder = try await MDNSResponder(interfaces: [namespace.hostInterface], hostLabel: "0A1B2C3D4E5F")
        try responder.advertise(Self.service)
        let found = try await Self.browse(in: namespace, for: ["_L3840._sub._matterc._udp.local.|_matterc._udp.local."])
        await responder.shutdown()

        #expect(found.status == 0, "the browser found \(found.output)")
        let node = try #require(found.services.first { $0["type"] as? String == "_matterc._udp.local." })
        #expect(node["name"] as? String == "DD200C20D25AE5F7._matterc._udp.local.")
        #expect(node["server"] as? String == "0A1B2C3D4E5F.local.")
        #expect(node["port"] as? Int == 5540)
        #expect((node["addresses"] as? [String])?.contains(namespace.hostAddress) == true)
        let txt = node["txt"] as? [String: String] ?? [:]
        #expect(txt["D"] == "3840" && txt["CM"] == "1" && txt["VP"] == "65521+32768" && txt["DN"] == "Hearth test")
        #expect(txt["SII"] == "500" && txt["SAI"] == "300" && txt["T"] == "0")
        #expect(responder.statistics.answered > 0)
    }

    @Test func anAddressAddedLaterIsAnsweredAfterARefresh() async throws {
        let namespace = try NetworkNamespace()
        let responder = try await MDNSResponder(interfaces: [namespace.hostInterface], hostLabel: "0A1B2C3D4E5F")
        try responder.advertise(Self.service)
        let directory = try Self.makeTemporaryDirectory(prefix: "hearth-mdns-address")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // TEST-NET-1 (RFC 5737), on the test's own veth.
        let added = "192.0.2.\(1 + getpid() % 250)"
        try ChildProcess.run("/usr/sbin/ip", ["addr", "add", "\(added)/32", "dev", namespace.hostInterface],
                             outputFile: "\(directory)/ip.log")
        try responder.refreshAddresses()
        let found = try await Self.browse(in: namespace, for: ["_L3840._sub._matterc._udp.local.|_matterc._udp.local."])
        await responder.shutdown()
        let addresses = found.services.first?["addresses"] as? [String] ?? []
        #expect(addresses.contains(added) && addresses.contains(namespace.hostAddress), "\(found.output)")
    }

    /// The other responder starts after ours, and before it (as avahi does at boot on a board, long before hearthd).
    @Test(arguments: [false, true])
    func itSharesPort5353WithAnotherResponderOnTheHost(neighbourFirst: Bool) async throws {
        let namespace = try NetworkNamespace()
        let directory = try Self.makeTemporaryDirectory(prefix: "hearth-mdns")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var neighbour: (kind: String, process: TestProcess)? = nil
        if neighbourFirst {
            let started = try Self.startNeighbour(on: namespace, in: directory)
            neighbour = started
            try await Self.waitForStart(of: started)
        }
        let responder = try await MDNSResponder(interfaces: [namespace.hostInterface], hostLabel: "0A1B2C3D4E5F")
        try responder.advertise(Self.service)
        if neighbour == nil { neighbour = try Self.startNeighbour(on: namespace, in: directory) }
        guard let neighbour else { return }
        defer { neighbour.process.send(SIGTERM) }

        let found = try await Self.browse(in: namespace, for: [
            "_L3840._sub._matterc._udp.local.|_matterc._udp.local.", "_hearthtest._tcp.local.|_hearthtest._tcp.local.",
        ])
        await responder.shutdown()
        let neighbourLog = (try? String(contentsOfFile: neighbour.process.outputFile, encoding: .utf8)) ?? ""
        let kind = neighbour.kind, output = found.output
        #expect(found.status == 0, "with \(kind) beside it, the browser found \(output)\n\(neighbourLog)")
        #expect(found.services.contains { $0["name"] as? String == "DD200C20D25AE5F7._matterc._udp.local." })
        #expect(found.services.contains { ($0["name"] as? String)?.hasSuffix("._hearthtest._tcp.local.") == true })
        if kind == "avahi-daemon" {
            // avahi bound the port beside the responder.
            #expect(neighbourLog.contains("Server startup complete"), "\(neighbourLog)")
        }
    }

    /// The responder's timer runs on the clock it is given: the announcements after the first come when the clock
    /// passes 1 s and 3 s, and not before; shutting down says goodbye. A listener at the other end of the link
    /// (python3-zeroconf's parser) reports each response with its SRV records' TTLs.
    @Test func announcementsFollowTheInjectedClockAndShutdownSaysGoodbye() async throws {
        let namespace = try NetworkNamespace()
        let directory = try Self.makeTemporaryDirectory(prefix: "hearth-mdns-listen")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.listener.write(toFile: "\(directory)/listen.py", atomically: true, encoding: .utf8)
        let listener = try TestProcess(namespace.launcher.first!, Array(namespace.launcher.dropFirst())
                                       + [Self.python, "\(directory)/listen.py", namespace.address])
        defer { listener.kill() }
        func lines() -> [Substring] {
            ((try? String(contentsOfFile: listener.outputFile, encoding: .utf8)) ?? "").split(separator: "\n")
        }
        func waitFor(_ what: String, _ condition: () -> Bool) async throws {
            guard await poll(within: .seconds(20), every: .milliseconds(20), condition) else {
                throw TestFixtureError("\(what): \(lines())")
            }
        }
        try await waitFor("the listener did not start") { lines().contains("listening") }

        let clock = MatterManualClock()
        let responder = try await MDNSResponder(
            interfaces: [namespace.hostInterface], hostLabel: "0A1B2C3D4E5F", clock: clock)
        let announcement = "response DD200C20D25AE5F7._matterc._udp.local.:120"
        let announcements = { lines().filter { $0 == announcement }.count }
        try responder.advertise(Self.service)
        try await waitFor("no first announcement") { announcements() == 1 }
        clock.advance(by: 999)
        clock.advance(by: 1)
        try await waitFor("no second announcement at 1 s") { announcements() == 2 }
        clock.advance(by: 1999)
        clock.advance(by: 1)
        try await waitFor("no third announcement at 3 s") { announcements() == 3 }
        clock.advance(by: 57_000)
        await responder.shutdown()
        try await waitFor("no goodbye") { lines().contains("response DD200C20D25AE5F7._matterc._udp.local.:0") }
        // Exactly three announcements whatever the clock did in between (nothing was due at 999 or 2999 ms).
        #expect(announcements() == 3, "\(lines())")
    }

    // MARK: helpers

    /// Browses from inside the namespace for each `browse-type|service-type` and resolves what it finds; each found
    /// service is a JSON object (type, name, server, port, addresses, txt).
    static func browse(in namespace: NetworkNamespace, for types: [String]) async throws
        -> (status: Int32?, output: String, services: [[String: Any]]) {
        let directory = try makeTemporaryDirectory(prefix: "hearth-mdns-browse")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = "\(directory)/browse.py"
        try browser.write(toFile: script, atomically: true, encoding: .utf8)
        let result = try await runToExitOffPool(namespace.launcher + [python, script, namespace.address, "20"] + types,
                                                timeout: .seconds(60))
        let services = result.output.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        return (result.status, result.output, services)
    }

    /// avahi-daemon on the host's end of the link (its own /run and services directory in a private mount namespace,
    /// no D-Bus), publishing `_hearthtest._tcp`; python3-zeroconf doing the same when avahi is not installed.
    static func startNeighbour(on namespace: NetworkNamespace, in directory: String) throws -> (
        kind: String, process: TestProcess
    ) {
        if let avahi = ChildProcess.locate(["/usr/sbin/avahi-daemon"]),
            let unshare = ChildProcess.locate(["/usr/bin/unshare", "unshare"])
        {
            try FileManager.default.createDirectory(atPath: "\(directory)/services", withIntermediateDirectories: true)
            try """
            <?xml version="1.0" standalone='no'?>
            <!DOCTYPE service-group SYSTEM "avahi-service.dtd">
            <service-group><name>avahi-neighbour</name>
            <service><type>_hearthtest._tcp</type><port>4242</port></service></service-group>
            """.write(toFile: "\(directory)/services/neighbour.service", atomically: true, encoding: .utf8)
            // `disallow-other-stacks=no` (avahi's default) is what makes avahi bind with SO_REUSEADDR.
            try """
            [server]
            host-name=avahi-neighbour
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=\(namespace.hostInterface)
            enable-dbus=no
            disallow-other-stacks=no
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-hinfo=no
            publish-workstation=no
            """.write(toFile: "\(directory)/avahi.conf", atomically: true, encoding: .utf8)
            let command = "mount -t tmpfs tmpfs /run && mkdir -p /run/avahi-daemon"
                + " && mount --bind \(directory)/services /etc/avahi/services"
                + " && exec \(avahi) -f \(directory)/avahi.conf --no-drop-root --no-chroot --no-rlimits"
            return (
                "avahi-daemon",
                try TestProcess(unshare, ["--mount", "--propagation", "private", "/bin/sh", "-c", command])
            )
        }
        let script = "\(directory)/register.py"
        try registrar.write(toFile: script, atomically: true, encoding: .utf8)
        return ("python3-zeroconf", try TestProcess(python, [script, namespace.hostAddress]))
    }

    /// Waits (at most 30 s) until the neighbour says it is up: avahi's "Server startup complete", zeroconf's
    /// "registered".
    static func waitForStart(of neighbour: (kind: String, process: TestProcess)) async throws {
        let started = await poll(within: .seconds(30), every: .milliseconds(50)) {
            let log = (try? String(contentsOfFile: neighbour.process.outputFile, encoding: .utf8)) ?? ""
            return log.contains("Server startup complete") || log.contains("registered")
        }
        if started { return }
        throw TestFixtureError("\(neighbour.kind) did not start in 30 s")
    }

    /// Runs a command to its end (killing it after `timeout`) on a thread of its own, not the test pool's.
    static func runToExitOffPool(_ command: [String], timeout: Duration) async throws -> (
        status: Int32?, output: String
    ) {
        try await withCheckedThrowingContinuation { done in
            DispatchQueue(label: "hearth.mdns-test").async {
                done.resume(with: Result { try runToExit(command[0], Array(command.dropFirst()), timeout: timeout) })
            }
        }
    }

    static func runToExit(_ executable: String, _ arguments: [String], timeout: Duration) throws -> (
        status: Int32?, output: String
    ) {
        let directory = try makeTemporaryDirectory(prefix: "hearth-mdns-run")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pid = try ChildProcess.spawn(
            executable, arguments, outputFile: "\(directory)/output", errorFile: "\(directory)/errors")
        let status = ChildProcess.waitForExit(pid, within: timeout)
        let output = (try? String(contentsOfFile: "\(directory)/output", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: "\(directory)/errors", encoding: .utf8)) ?? ""
        return (status, output + (status == 0 ? "" : errors))
    }

    static func makeTemporaryDirectory(prefix: String) throws -> String {
        let path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let browser = """
        import json, sys, time
        from zeroconf import Zeroconf, ServiceBrowser, ServiceInfo, IPVersion
        address, timeout, wanted = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
        zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
        found = {}
        class Listener:
            def __init__(self, service_type): self.service_type = service_type
            def add_service(self, zc, type_, name): found.setdefault(self.service_type, set()).add(name)
            def update_service(self, zc, type_, name): self.add_service(zc, type_, name)
            def remove_service(self, zc, type_, name): pass
        browsers = [ServiceBrowser(zc, w.split("|")[0], Listener(w.split("|")[1])) for w in wanted]
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(found) < len(wanted): time.sleep(0.05)
        ok = len(found) == len(wanted)
        for service_type, names in found.items():
            for name in sorted(names):
                info = ServiceInfo(service_type, name)
                resolved = info.request(zc, 5000)
                ok = ok and resolved
                txt = {k.decode(): (v.decode() if v is not None else None) for k, v in (info.properties or {}).items()}
                addresses = info.parsed_addresses() if resolved else []
                print(json.dumps({"type": service_type, "name": name, "resolved": resolved, "server": info.server,
                                  "port": info.port, "addresses": addresses, "txt": txt}),
                      flush=True)
        for browser in browsers: browser.cancel()
        zc.close()
        sys.exit(0 if ok else 1)
        """

    static let listener = """
        import socket, sys
        from zeroconf import DNSIncoming
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", 5353))
        membership = socket.inet_aton("224.0.0.251") + socket.inet_aton(sys.argv[1])
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        print("listening", flush=True)
        while True:
            data, source = s.recvfrom(9000)
            message = DNSIncoming(data)
            if message.valid and message.is_response():
                srv = [r for r in message.answers if r.type == 33]
                print("response", " ".join(f"{r.name}:{r.ttl}" for r in srv), flush=True)
        """

    static let registrar = """
        import socket, sys, time
        from zeroconf import Zeroconf, ServiceInfo, IPVersion
        address = sys.argv[1]
        zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
        zc.register_service(ServiceInfo("_hearthtest._tcp.local.", "neighbour._hearthtest._tcp.local.", port=4242,
                                        addresses=[socket.inet_aton(address)], server="neighbour.local."))
        print("registered", flush=True)
        time.sleep(600)
        """
}
