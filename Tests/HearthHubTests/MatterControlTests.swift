// The Matter control socket's words: requests read strictly with a reason for every refusal, answers written and
// read back, and a reset of a stopped hub's state directory.

#if canImport(Glibc)
import Glibc
#endif
import HearthMatter
@testable import HearthHub
import Testing

@Suite struct MatterControlTests {
    func parse(_ text: String) throws(MatterControlError) -> MatterControlRequest {
        try MatterControlRequest(parsing: Array(text.utf8))
    }

    @Test func requestsReadAsWritten() throws {
        for request: MatterControlRequest in [
            .fabrics, .reset, .openWindow(timeoutSeconds: 900), .openWindow(timeoutSeconds: 0),
            .remove(1), .remove(254)
        ] {
            #expect(try parse(request.line) == request)
        }
    }

    @Test func malformedRequestsAreRefusedWithTheReason() {
        let cases: [(String, String)] = [
            ("fabrics", "a request ends with a newline"),
            ("remove 0\n", "a fabric index is a number from 1 to 254, not \"0\""),
            ("remove 255\n", "a fabric index is a number from 1 to 254, not \"255\""),
            ("remove 01\n", "a fabric index is a number from 1 to 254, not \"01\""),
            ("remove\n", "\"remove\" takes one argument, the fabric index"),
            ("open-window  900\n", "\"open-window\" takes one argument, the timeout in seconds"),
            ("fabrics all\n", "\"fabrics\" takes no argument"),
            ("reboot\n", "unknown request \"reboot\": fabrics, open-window, remove or reset"),
            ("reset\r\n", "a request is printable ASCII; byte 0xd is not"),
            (String(repeating: "x", count: 65), "a request is at most 64 bytes, this one 65"),
        ]
        for (text, reason) in cases {
            #expect(throws: MatterControlError(reason)) { try parse(text) }
        }
    }

    @Test func answersReadBack() throws {
        let fabric = MatterFabricSummary(index: 3, fabricID: 0xABCD, vendorID: 0xFFF1, nodeID: 0x1B669,
                                         rootFingerprint: "0011223344556677", label: "Living room\nhub")
        let answers: [(MatterControlResponse, MatterControlRequest)] = [
            (
                .fabrics([
                    fabric,
                    MatterFabricSummary(
                        index: 4, fabricID: 1, vendorID: 0x130D, nodeID: 2,
                        rootFingerprint: "8899AABBCCDDEEFF", label: "")
                ]), .fabrics
            ),
            (.fabrics([]), .fabrics),
            (
                .window(MatterPairing(passcode: 20202021, discriminator: 3840), timeoutSeconds: 300),
                .openWindow(timeoutSeconds: 300)
            ),
            (.done, .remove(3)),
            (.error("no fabric 9; the hub has 3"), .remove(9))
        ]
        for (answer, request) in answers {
            #expect(try MatterControlResponse(parsing: answer.text, for: request) == answer)
        }
        #expect(throws: MatterControlError("the hub closed the connection without an answer")) {
            try MatterControlResponse(parsing: "", for: .fabrics)
        }
    }

    @Test func aStoppedHubsResetForgetsTheFabricsAndKeepsTheRest() throws {
        var template = Array("/tmp/hearth-matter-control-XXXXXX".utf8CString)
        let state = String(cString: try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }))
        #expect(throws: MatterHub.StateError.self) { try MatterHub.resetStoredFabrics(stateDirectory: state) }
        let pairing = try MatterHub.pairing(MatterSettings(), stateDirectory: state)
        let storage = FileNodeStorage(directory: MatterHub.directory(stateDirectory: state))
        try storage.store(.fabrics, [1, 2, 3])
        try storage.store(.nodeSettings, [4])
        try MatterHub.resetStoredFabrics(stateDirectory: state)
        #expect(try storage.load(.fabrics) == nil)
        #expect(try storage.load(.nodeSettings) == [4])
        #expect(try MatterHub.pairing(MatterSettings(), stateDirectory: state) == pairing)
        // No socket: the hub is not running.
        #expect(throws: MatterControlClient.Failure.self) {
            try MatterControlClient.send(.fabrics, path: MatterControlClient.socketPath(stateDirectory: state))
        }
    }
}
