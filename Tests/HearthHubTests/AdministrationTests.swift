import Foundation
import HearthConfig
import HearthSync
import HearthTestKit
import Logging
import ServiceLifecycle
import Testing

@testable import HearthHub

/// The configuration as the web page edits it: checked as check-config checks a file, written only without problems,
/// atomically, with the last one that started kept and put back when a saved one does not start.
@Suite(.timeLimit(.minutes(1)))
final class EditedConfigurationTests {
    let directory: String
    let board = Repository.path("boards/sim.yaml")

    init() throws {
        directory = NSTemporaryDirectory() + "hearth-admin-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func good(_ name: String = "Porch") -> String {
        "hub: {id: test, board: \(board)}\ndevices:\n  - {id: porch, name: \(name), type: OnOffLight, "
            + "binding: {kind: relay, pin: relay-1}}\n"
    }

    func file(_ text: String) throws -> ConfigurationFile {
        let path = directory + "/hearth.yaml"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return ConfigurationFile(path: path, hardware: BoardHardware())
    }

    func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }
    var listing: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted() }

    @Test func aBrokenTextIsReportedAtItsLineAndColumnAndNothingIsWritten() throws {
        let f = try file(good())
        let broken = good().replacingOccurrences(of: "pin: relay-1", with: "pin: relay-9")
        for report in [try f.check(Array(broken.utf8)), try f.save(Array(broken.utf8))] {
            #expect(report.problems.count == 1)
            let p = try #require(report.problems.first)
            #expect(p.file == f.path)
            #expect(p.line == 3)
            #expect(p.column > 1)
            #expect(p.path.hasPrefix("devices[0].binding"))
            #expect(p.message.contains("relay-9"))
            #expect(!p.message.contains(".check-"))
        }
        #expect(contents(f.path) == good())
        #expect(!f.isPending)
        #expect(listing == ["hearth.yaml"])  // no copy left behind
    }

    @Test func aGoodTextIsWrittenWholeAndWaitsForItsStart() throws {
        let f = try file(good())
        let report = try f.save(Array(good("Front door").utf8))
        #expect(report.problems.isEmpty)
        #expect(report.summary.contains { $0.contains("porch") && $0.contains("relay") })
        #expect(contents(f.path) == good("Front door"))
        #expect(f.isPending)
        #expect(listing == ["hearth.yaml", "hearth.yaml.pending"])
    }

    @Test func aStartKeepsItsTextAndSettlesThePendingSave() throws {
        let first = try file(good())
        first.started(logger: Logger(label: "test"))
        #expect(contents(first.lastStartedPath) == good())
        _ = try first.save(Array(good("Front door").utf8))
        let second = ConfigurationFile(path: first.path, hardware: BoardHardware())
        #expect(second.startedText == Array(good("Front door").utf8))
        second.started(logger: Logger(label: "test"))
        #expect(!second.isPending)
        #expect(contents(first.lastStartedPath) == good("Front door"))
        #expect(!second.rollBack(logger: Logger(label: "test")))  // nothing pending: a failed start is not undone
        #expect(contents(first.path) == good("Front door"))
    }

    @Test func aSavedTextThatFailsAtStartIsRolledBackToTheLastThatStarted() throws {
        let first = try file(good())
        first.started(logger: Logger(label: "test"))
        _ = try first.save(Array(good("Front door").utf8))
        // The next start fails after all (say, its port is taken): the last one that started goes back.
        let failing = ConfigurationFile(path: first.path, hardware: BoardHardware())
        let records = RecordingLogHandler()
        #expect(failing.rollBack(logger: Logger(label: "test") { _ in records }))
        #expect(contents(first.path) == good())
        #expect(contents(failing.rejectedPath) == good("Front door"))
        #expect(!failing.isPending)
        #expect(records.count(.critical, containing: "rolled back") == 1)
        // Once only: the start after the rollback runs the old text, and a failure then is a plain failure.
        #expect(!ConfigurationFile(path: first.path, hardware: BoardHardware()).rollBack(logger: Logger(label: "test")))
    }

    @Test func aTooLargeTextIsAProblemNotAWrite() throws {
        let f = try file(good())
        let report = try f.save([UInt8](repeating: 0x23, count: ConfigurationFile.maximumSize + 1))
        #expect(report.problems.count == 1)
        #expect(contents(f.path) == good())
    }
}

final class LogRingHeardCount: Sendable { let count = Locked(0) }
final class RestartServiceEnded: Sendable { let value = Locked(false) }

/// The log ring: bounded, numbered, filtered by level, and never holding a secret.
@Suite struct LogRingTests {
    @Test func itKeepsTheNewestLinesNumberedInOrder() {
        let ring = LogRing(capacity: 3, now: { "T" })
        for i in 1...5 { ring.append(level: .info, text: "line \(i)") }
        #expect(ring.lines().map(\.text) == ["line 3", "line 4", "line 5"])
        #expect(ring.lines().map(\.sequence) == [3, 4, 5])
        #expect(ring.lines(after: 4).map(\.text) == ["line 5"])
        #expect(ring.lines(limit: 2).map(\.sequence) == [4, 5])
        #expect(ring.newest == 5)
    }

    @Test func aLevelFilterKeepsThatLevelAndWorse() {
        let ring = LogRing(now: { "T" })
        for level in Logger.Level.allCases { ring.append(level: level, text: level.rawValue) }
        #expect(ring.lines(atLeast: .warning).map(\.text) == ["warning", "error", "critical"])
    }

    @Test func secretsAreTakenOutAsALineEntersAndFromLinesAlreadyHeld() {
        let ring = LogRing(now: { "T" })
        ring.append(level: .info, text: "connecting with hunter2-secret")
        ring.redact(["hunter2-secret", "ab"])  // two characters are too few to look for
        ring.append(level: .info, text: "again hunter2-secret, ab")
        #expect(ring.lines().map(\.text) == ["connecting with ‹secret›", "again ‹secret›, ab"])
    }

    @Test func aLongLineIsCut() {
        let ring = LogRing(now: { "T" })
        ring.append(level: .info, text: String(repeating: "x", count: LogRing.maximumLineLength + 10))
        #expect(ring.lines()[0].text.utf8.count == LogRing.maximumLineLength + "…".utf8.count)
    }

    @Test func observersHearOfEachLineUntilRemoved() {
        let ring = LogRing(now: { "T" })
        let heard = LogRingHeardCount()
        let id = ring.observe { heard.count.withLock { $0 += 1 } }
        ring.append(level: .info, text: "a")
        ring.removeObserver(id)
        ring.append(level: .info, text: "b")
        #expect(heard.count.withLock { $0 } == 1)
    }

    @Test func theHandlerWritesTheMessageAndItsMetadataAtItsLevel() {
        let ring = LogRing(now: { "T" })
        var logger = Logger(label: "hearthd") { RingLogHandler(ring: ring, label: $0, level: .info) }
        logger[metadataKey: "device"] = "porch"
        logger.debug("not kept")
        logger.notice("relay stuck", metadata: ["pin": "17"])
        #expect(
            ring.lines() == [LogLine(sequence: 1, time: "T", level: .notice, text: "relay stuck device=porch pin=17")])
    }

    @Test func theWallClockStampIsUTCToTheMillisecond() {
        let stamp = LogRing.utcNow()
        #expect(stamp.count == 24)
        #expect(stamp.hasSuffix("Z"))
        #expect(stamp.dropFirst(10).first == "T")
    }
}

/// The hub's one way to restart: a request ends the service group gracefully and is remembered for the exit status.
@Suite(.timeLimit(.minutes(1))) struct HubRestartTests {
    struct UntilShutdown: Service {
        let ended: RestartServiceEnded
        func run() async throws {
            try? await gracefulShutdown()
            ended.value.withLock { $0 = true }
        }
    }

    @Test func aRequestShutsTheGroupDownGracefully() async throws {
        let restart = HubRestart()
        let ended = RestartServiceEnded()
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: UntilShutdown(ended: ended), serviceName: "work"),
                       .init(service: RestartService(restart: restart),
                             successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "restart")],
            logger: Logger(label: "test")))
        async let running: Void = group.run()
        restart.request(reason: "a new configuration")
        restart.request(reason: "another")
        try await running
        #expect(ended.value.withLock { $0 })
        #expect(restart.reason == "a new configuration")
    }

    struct Done: Service { func run() async throws {} }

    @Test func aShutdownWithoutARequestLeavesNoReason() async throws {
        let restart = HubRestart()
        // Another service ends first and shuts the group down, as SIGTERM does.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(
                        service: RestartService(restart: restart),
                        successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "restart"),
                    .init(service: Done(), successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "done")
                ],
                logger: Logger(label: "test")))
        try await group.run()
        #expect(restart.reason == nil)
    }
}
