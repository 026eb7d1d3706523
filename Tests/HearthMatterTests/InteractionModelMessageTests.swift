// The Interaction Model's messages: exact bytes for hand-checked encodings, round trips, and the refusal of every
// malformed shape with INVALID_ACTION.

@testable import HearthMatter
import Testing

@Suite struct InteractionModelMessageTests {
    @Test func readRequestHasTheSpecificationsTags() {
        // {0: [[2: 0, 3: 0x28, 4: 1]], 3: true, 0xFF: 12}, written out by hand from §10.7.2 and §10.6.2.
        let request = ReadRequest(attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 1)])
        #expect(request.encoded().encoded() == [
            0x15,
            0x36, 0x00,
            0x17, 0x24, 0x02, 0x00, 0x24, 0x03, 0x28, 0x24, 0x04, 0x01, 0x18,
            0x18,
            0x29, 0x03,
            0x24, 0xFF, 0x0C,
            0x18,
        ])
    }

    @Test func statusResponseHasTheSpecificationsTags() {
        #expect(StatusResponse(.invalidAction).encoded().encoded() == [0x15, 0x24, 0x00, 0x80, 0x24, 0xFF, 0x0C, 0x18])
    }

    @Test func everyMessageRoundTrips() throws {
        let path = AttributePath(endpoint: 1, cluster: 6, attribute: 0)
        let read = ReadRequest(
            attributeRequests: [path, AttributePath(cluster: 0x28)], isFabricFiltered: false,
            dataVersionFilters: [DataVersionFilter(path: ConcreteClusterPath(endpoint: 1, cluster: 6), dataVersion: 9)])
        #expect(try ReadRequest(decoding: read.encoded().encoded()) == read)
        let report = ReportData(subscriptionID: 4, attributeReports: [
            .data(AttributeDataIB(dataVersion: 3, path: path, data: .bool(true))),
            .status(AttributeStatusIB(path: path, status: StatusIB(.unsupportedAttribute))),
        ], moreChunkedMessages: true)
        #expect(try ReportData(decoding: report.encoded().encoded()) == report)
        var appendPath = path
        appendPath.listIndex = .append
        let write = WriteRequest(
            timedRequest: true,
            writeRequests: [
                AttributeDataIB(
                    dataVersion: nil, path: appendPath, data: .structure([TLVElement(context: 1, .uint(UInt8(5)))]))
            ])
        #expect(try WriteRequest(decoding: write.encoded().encoded()) == write)
        let writeResponse = WriteResponse(writeResponses: [
            AttributeStatusIB(path: path, status: StatusIB(.constraintError))
        ])
        #expect(try WriteResponse(decoding: writeResponse.encoded().encoded()) == writeResponse)
        let command = CommandPath(endpoint: 0, cluster: 0x30, command: 0)
        let invoke = InvokeRequest(invokeRequests: [CommandDataIB(path: command, fields: TLVElement(.structure([
            TLVElement(context: 0, .uint(UInt16(60))),
        ])), commandRef: 1)])
        #expect(try InvokeRequest(decoding: invoke.encoded().encoded()) == invoke)
        let invokeResponse = InvokeResponse(invokeResponses: [
            .status(CommandStatusIB(path: command, status: StatusIB(.failure, clusterStatus: 3))),
            .command(CommandDataIB(path: command, fields: TLVElement(.structure([])))),
        ])
        #expect(try InvokeResponse(decoding: invokeResponse.encoded().encoded()) == invokeResponse)
        #expect(
            try TimedRequest(decoding: TimedRequest(timeoutMilliseconds: 500).encoded().encoded()).timeoutMilliseconds
                == 500)
        let subscribe = SubscribeRequest(
            minIntervalFloorSeconds: 1, maxIntervalCeilingSeconds: 60, attributeRequests: [path])
        #expect(try SubscribeRequest(decoding: subscribe.encoded().encoded()) == subscribe)
        let subscribed = SubscribeResponse(subscriptionID: 7, maxIntervalSeconds: 60)
        #expect(try SubscribeResponse(decoding: subscribed.encoded().encoded()) == subscribed)
    }

    @Test(arguments: [
        ("not TLV", [0x15, 0x24] as [UInt8]),
        ("an array, not a structure", [0x16, 0x18]),
        ("no FabricFiltered", [0x15, 0x36, 0x00, 0x17, 0x24, 0x02, 0x00, 0x18, 0x18, 0x18]),
        ("FabricFiltered not a boolean", [0x15, 0x24, 0x03, 0x01, 0x18]),
        ("paths not an array", [0x15, 0x35, 0x00, 0x18, 0x29, 0x03, 0x18]),
        ("a path that is a structure", [0x15, 0x36, 0x00, 0x15, 0x18, 0x18, 0x29, 0x03, 0x18]),
        (
            "an endpoint above 0xFFFF",
            [0x15, 0x36, 0x00, 0x17, 0x26, 0x02, 0x00, 0x00, 0x01, 0x00, 0x18, 0x18, 0x29, 0x03, 0x18]
        ),
        ("an endpoint that is signed", [0x15, 0x36, 0x00, 0x17, 0x20, 0x02, 0x00, 0x18, 0x18, 0x29, 0x03, 0x18]),
        (
            "a repeated path member",
            [0x15, 0x36, 0x00, 0x17, 0x24, 0x02, 0x00, 0x24, 0x02, 0x01, 0x18, 0x18, 0x29, 0x03, 0x18]
        ),
        (
            "a path member with a profile tag",
            [0x15, 0x36, 0x00, 0x17, 0x44, 0x02, 0x00, 0x00, 0x18, 0x18, 0x29, 0x03, 0x18]
        ),
        ("no path at all", [0x15, 0x29, 0x03, 0x18]),
        ("tag compression", [0x15, 0x36, 0x00, 0x17, 0x29, 0x00, 0x18, 0x18, 0x29, 0x03, 0x18]),
        ("trailing bytes", [0x15, 0x36, 0x00, 0x17, 0x18, 0x18, 0x29, 0x03, 0x18, 0x00])
    ])
    func malformedReadRequestsAreInvalidAction(_ what: String, _ bytes: [UInt8]) {
        do {
            _ = try ReadRequest(decoding: bytes)
            Issue.record("\(what) was accepted")
        } catch {
            #expect(error.status == .invalidAction, "\(what): \(error)")
        }
    }

    @Test func unknownContextTagsAreIgnored() throws {
        // {0: [[4: 1]], 3: true, 9: 1}: member 9 is not a ReadRequest member; a newer controller may send it.
        let bytes: [UInt8] = [0x15, 0x36, 0x00, 0x17, 0x24, 0x04, 0x01, 0x18, 0x18, 0x29, 0x03, 0x24, 0x09, 0x01, 0x18]
        let request = try ReadRequest(decoding: bytes)
        #expect(request.attributeRequests == [AttributePath(attribute: 1)])
    }

    @Test func malformedInvokeRequestsAreInvalidAction() {
        let cases: [(String, TLVElement)] = [
            ("no InvokeRequests", TLVElement.structure {
                TLVElement(context: 0, .bool(false))
                TLVElement(context: 1, .bool(false))
            }),
            ("an empty InvokeRequests", TLVElement.structure {
                TLVElement(context: 0, .bool(false))
                TLVElement(context: 1, .bool(false))
                TLVElement(context: 2, .array([]))
            }),
            ("fields that are not a structure", TLVElement.structure {
                TLVElement(context: 0, .bool(false))
                TLVElement(context: 1, .bool(false))
                TLVElement.array(tag: .context(2)) {
                    TLVElement.structure {
                        CommandPath(endpoint: 0, cluster: 6, command: 1).encoded(tag: .context(0))
                        TLVElement(context: 1, .unsigned(3))
                    }
                }
            }),
            ("a command path without its command", TLVElement.structure {
                TLVElement(context: 0, .bool(false))
                TLVElement(context: 1, .bool(false))
                TLVElement.array(tag: .context(2)) {
                        TLVElement.structure {
                            TLVElement.list(tag: .context(0)) { TLVElement(context: 1, .uint(UInt8(6))) }
                        }
                }
            }),
        ]
        for (what, element) in cases {
            do {
                _ = try InvokeRequest(decoding: element.encoded())
                Issue.record("\(what) was accepted")
            } catch {
                #expect(error.status == .invalidAction, "\(what): \(error)")
            }
        }
    }
}
