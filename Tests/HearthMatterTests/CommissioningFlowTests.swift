// Commissioning at the Interaction Model level, as a commissioner drives it: the fail-safe, the CSR, the trusted root,
// AddNOC and CommissioningComplete; what expiry rolls back; fabric indexes; what is stored and restored.

@testable import HearthMatter
import Testing

@Suite struct CommissioningFlowTests {
    let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 7, count: 16))

    @Test func commissioningEndToEndStoresTheFabricAndItsAdmin() throws {
        let fixture = try MatterNodeFixture()
        let writesBefore = fixture.storage.writeCount
        let index = try fixture.addFabric()
        #expect(index == 1)
        #expect(fixture.node.takeEvents() == [.fabricAdded(1)])
        // Nothing of it is stored before CommissioningComplete.
        #expect(fixture.storage.writeCount == writesBefore)
        #expect(try fixture.storage.load(.fabrics) == nil)

        #expect(try fixture.completeCommissioning(fabric: index) == 0)
        #expect(fixture.node.takeEvents() == [.commissioningCompleted(1)])
        #expect(!fixture.node.commissioning.isFailSafeArmed)
        #expect(try fixture.storage.load(.fabrics) != nil)

        // The commissioner is the fabric's administrator over CASE.
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let acl = try fixture.readValue(0, 0x001F, 0, as: admin)
        guard case .array(let entries) = acl else { Issue.record("ACL is \(acl)"); return }
        #expect(entries.count == 1)
        #expect(entries[0][context: 1]?.unsignedValue == 5)
        #expect(entries[0][context: 2]?.unsignedValue == 2)
        #expect(entries[0][context: 3]?.arrayMembers?.map(\.unsignedValue) == [112233])
        #expect(entries[0][context: 0xFE]?.unsignedValue == 1)
        #expect(try fixture.readValue(0, 0x003E, 5, as: admin) == .unsigned(1))
        #expect(try fixture.readValue(0, 0x003E, 3, as: admin) == .unsigned(1))
        #expect(try fixture.readValue(0, 0x0030, 0, as: admin) == .unsigned(0))

        // A restart finds the fabric and its ACL.
        let restarted = try MatterNodeFixture(storage: fixture.storage)
        #expect(restarted.node.commissioning.fabrics == fixture.node.commissioning.fabrics)
        #expect(restarted.node.commissioning.acl == fixture.node.commissioning.acl)
        #expect(restarted.node.commissioning.isCommissioned)
        #expect(try restarted.readValue(0, 0x0033, 1, as: admin) == .unsigned(2))
    }

    @Test func anotherNodeOnTheFabricIsRefusedWithoutAnEntry() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let stranger = SubjectDescriptor.caseSession(fabricIndex: index, node: 999)
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 0, cluster: 0x0028, attribute: 1), as: stranger)
                == .unsupportedAccess)
        #expect(try fixture.invokeStatus(0, 0x0030, 0x00, as: stranger) {
            TLVElement(context: 0, .uint(UInt16(60)))
            TLVElement(context: 1, .uint(UInt64(0)))
        } == .unsupportedAccess)
        // A wildcard read leaves out what it may not read rather than failing.
        let (reports, _) = try fixture.read([AttributePath()], as: stranger)
        #expect(reports.isEmpty)
    }

    @Test func failSafeExpiryRollsBackEverythingAddedUnderIt() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric(failSafeSeconds: 60)
        #expect(fixture.node.commissioning.fabrics.count == 1)
        #expect(fixture.node.nextDeadline == fixture.clock.start + 60_000)
        _ = fixture.node.takeEvents()

        fixture.clock.advance(.seconds(59))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.commissioning.fabrics.count == 1)

        fixture.clock.advance(.seconds(1))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.commissioning.fabrics.isEmpty)
        #expect(fixture.node.commissioning.acl.isEmpty)
        #expect(!fixture.node.commissioning.isFailSafeArmed)
        #expect(fixture.node.commissioning.breadcrumb == 0)
        #expect(fixture.node.takeEvents() == [.failSafeExpired(removedFabrics: [index])])
        #expect(try fixture.storage.load(.fabrics) == nil)
        // The trusted root went with it.
        #expect(try fixture.readValue(0, 0x003E, 4, as: pase) == .array([]))
        // The fabric's administrator has no access left, and over PASE CommissioningComplete finds no fail-safe.
        #expect(
            try fixture.invokeStatus(0, 0x0030, 0x04, as: .caseSession(fabricIndex: index, node: 112233))
                == .unsupportedAccess)
        let late = try fixture.invokeForResponse(0, 0x0030, 0x04, as: pase)
        #expect(late[context: 0]?.unsignedValue == UInt64(CommissioningError.noFailSafe.rawValue))
    }

    @Test func expiryIsSeenByTheNextMessageWithoutATick() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric(failSafeSeconds: 10)
        fixture.clock.advance(.seconds(11))
        #expect(
            try fixture.invokeStatus(0, 0x0030, 0x04, as: .caseSession(fabricIndex: index, node: 112233))
                == .unsupportedAccess)
        #expect(fixture.node.commissioning.fabrics.isEmpty)
    }

    @Test func armingWithZeroSecondsDisarmsAndRollsBack() throws {
        let fixture = try MatterNodeFixture()
        _ = try fixture.addFabric()
        let response = try fixture.invokeForResponse(0, 0x0030, 0x00, as: pase) {
            TLVElement(context: 0, .uint(UInt16(0)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        #expect(response[context: 0]?.unsignedValue == 0)
        #expect(fixture.node.commissioning.fabrics.isEmpty)
        #expect(!fixture.node.commissioning.isFailSafeArmed)
    }

    @Test func rollbackRestoresACLChangesOfACommittedFabric() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let before = fixture.node.commissioning.acl
        let arm = try fixture.invokeForResponse(0, 0x0030, 0x00, as: admin) {
            TLVElement(context: 0, .uint(UInt16(30)))
            TLVElement(context: 1, .uint(UInt64(9)))
        }
        #expect(arm[context: 0]?.unsignedValue == 0)
        let extra = ACLEntry(privilege: .view, authMode: .case, subjects: [42], fabricIndex: index)
        let statuses = try fixture.write(
            [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x001F, attribute: 0),
                    data: .array((before + [extra]).map { $0.encoded(includingFabricIndex: false) }))
            ],
            as: admin)
        #expect(statuses == [.success])
        #expect(fixture.node.commissioning.acl.count == 2)
        fixture.clock.advance(.seconds(31))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.commissioning.acl == before)
        #expect(fixture.node.commissioning.fabrics.count == 1)
    }

    @Test func theFailSafeBelongsToWhoeverArmedIt() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        _ = try fixture.invokeForResponse(0, 0x0030, 0x00, as: admin) {
            TLVElement(context: 0, .uint(UInt16(30)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        // A PASE session of another commissioner finds it busy.
        let other = try fixture.invokeForResponse(0, 0x0030, 0x00, as: pase) {
            TLVElement(context: 0, .uint(UInt16(30)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        #expect(other[context: 0]?.unsignedValue == 4)
    }

    @Test func commissioningCompleteNeedsCASEOnTheNewFabric() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        let overPASE = try fixture.invokeForResponse(0, 0x0030, 0x04, as: .pase(fabricIndex: index))
        #expect(overPASE[context: 0]?.unsignedValue == 2)
        #expect(fixture.node.commissioning.isFailSafeArmed)
    }

    @Test func commandsThatNeedTheFailSafeSaySo() throws {
        let fixture = try MatterNodeFixture()
        #expect(try fixture.invokeStatus(0, 0x003E, 0x04, as: pase) {
            TLVElement(context: 0, .bytes([UInt8](repeating: 1, count: 32)))
        } == .failsafeRequired)
        #expect(try fixture.invokeStatus(0, 0x003E, 0x0B, as: pase) {
            TLVElement(context: 0, .bytes(StandInCertificates.root(publicKey: MatterNodeFixture.rootPublicKey)))
        } == .failsafeRequired)
    }

    @Test func addNOCWithoutACSRIsMissingCSR() throws {
        let fixture = try MatterNodeFixture()
        _ = try fixture.invokeForResponse(0, 0x0030, 0x00, as: pase) {
            TLVElement(context: 0, .uint(UInt16(60)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        let response = try fixture.invokeForResponse(0, 0x003E, 0x06, as: pase) {
            TLVElement(context: 0, .bytes([1, 2, 3]))
            TLVElement(context: 2, .bytes([UInt8](repeating: 0, count: 16)))
            TLVElement(context: 3, .uint(UInt64(112233)))
            TLVElement(context: 4, .uint(UInt16(0xFFF1)))
        }
        #expect(response[context: 0]?.unsignedValue == UInt64(NOCStatus.missingCSR.rawValue))
        #expect(fixture.node.commissioning.fabrics.isEmpty)
    }

    @Test func aNOCForAnotherKeyIsRefused() throws {
        let fixture = try MatterNodeFixture()
        _ = try fixture.invokeForResponse(0, 0x0030, 0x00, as: pase) {
            TLVElement(context: 0, .uint(UInt16(60)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        _ = try fixture.invokeForResponse(0, 0x003E, 0x04, as: pase) {
            TLVElement(context: 0, .bytes([UInt8](repeating: 1, count: 32)))
        }
        _ = try fixture.invokeStatus(0, 0x003E, 0x0B, as: pase) {
            TLVElement(context: 0, .bytes(StandInCertificates.root(publicKey: MatterNodeFixture.rootPublicKey)))
        }
        let response = try fixture.invokeForResponse(0, 0x003E, 0x06, as: pase) {
            TLVElement(
                context: 0,
                .bytes(
                    StandInCertificates.noc(
                        fabricID: 1, nodeID: 2, publicKey: [0x04] + [UInt8](repeating: 0xEE, count: 64),
                        rootPublicKey: MatterNodeFixture.rootPublicKey)))
            TLVElement(context: 2, .bytes([UInt8](repeating: 0, count: 16)))
            TLVElement(context: 3, .uint(UInt64(112233)))
            TLVElement(context: 4, .uint(UInt16(0xFFF1)))
        }
        #expect(response[context: 0]?.unsignedValue == UInt64(NOCStatus.invalidPublicKey.rawValue))
        #expect(fixture.node.commissioning.fabrics.isEmpty)
    }

    @Test func fabricIndexesAreNeverZeroAndNotReusedAtOnce() throws {
        let fixture = try MatterNodeFixture()
        var indexes: [FabricIndex] = []
        for n in 1...3 {
            let index = try fixture.addFabric(
                fabricID: UInt64(n), rootPublicKey: [0x04] + [UInt8](repeating: UInt8(n), count: 64))
            #expect(try fixture.completeCommissioning(fabric: index) == 0)
            indexes.append(index)
        }
        #expect(indexes == [1, 2, 3])
        let admin = SubjectDescriptor.caseSession(fabricIndex: 2, node: 112233)
        let removed = try fixture.invokeForResponse(0, 0x003E, 0x0A, as: admin) {
            TLVElement(context: 0, .uint(UInt8(2)))
        }
        #expect(removed[context: 0]?.unsignedValue == 0)
        #expect(fixture.node.takeEvents().contains(.fabricRemoved(2)))
        let next = try fixture.addFabric(fabricID: 9, rootPublicKey: [0x04] + [UInt8](repeating: 9, count: 64))
        #expect(next == 4)
        #expect(!fixture.node.commissioning.fabrics.contains { $0.index == 0 })
        let admin1 = SubjectDescriptor.caseSession(fabricIndex: 1, node: 112233)
        // RemoveFabric of 0 is a constraint error, of an absent fabric InvalidFabricIndex.
        #expect(
            try fixture.invokeStatus(0, 0x003E, 0x0A, as: admin1) { TLVElement(context: 0, .uint(UInt8(0))) }
                == .constraintError)
        let absent = try fixture.invokeForResponse(0, 0x003E, 0x0A, as: admin1) {
            TLVElement(context: 0, .uint(UInt8(77)))
        }
        #expect(absent[context: 0]?.unsignedValue == UInt64(NOCStatus.invalidFabricIndex.rawValue))
    }

    @Test func theSameFabricTwiceIsAConflict() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let again = try fixture.addNOC()
        #expect(again.status == NOCStatus.fabricConflict.rawValue)
        #expect(again.index == nil)
        #expect(fixture.node.commissioning.fabrics.count == 1)
    }

    @Test func fabricLabelsAreUniqueAndBounded() throws {
        let fixture = try MatterNodeFixture()
        let first = try fixture.addFabric(fabricID: 1, rootPublicKey: [0x04] + [UInt8](repeating: 1, count: 64))
        _ = try fixture.completeCommissioning(fabric: first)
        let second = try fixture.addFabric(fabricID: 2, rootPublicKey: [0x04] + [UInt8](repeating: 2, count: 64))
        _ = try fixture.completeCommissioning(fabric: second)
        let label = try fixture.invokeForResponse(0, 0x003E, 0x09, as: .caseSession(fabricIndex: first, node: 112233)) {
            TLVElement(context: 0, .utf8("Home"))
        }
        #expect(label[context: 0]?.unsignedValue == 0)
        let conflict = try fixture.invokeForResponse(
            0, 0x003E, 0x09, as: .caseSession(fabricIndex: second, node: 112233)
        ) {
            TLVElement(context: 0, .utf8("Home"))
        }
        #expect(conflict[context: 0]?.unsignedValue == UInt64(NOCStatus.labelConflict.rawValue))
        #expect(try fixture.invokeStatus(0, 0x003E, 0x09, as: .caseSession(fabricIndex: second, node: 112233)) {
            TLVElement(context: 0, .utf8(String(repeating: "x", count: 33)))
        } == .constraintError)
        // Fabrics read unfiltered shows both, filtered only the reader's.
        let admin = SubjectDescriptor.caseSession(fabricIndex: first, node: 112233)
        guard case .array(let all) = try fixture.readValue(0, 0x003E, 1, as: admin, fabricFiltered: false),
            case .array(let own) = try fixture.readValue(0, 0x003E, 1, as: admin)
        else { Issue.record("Fabrics"); return }
        #expect(all.count == 2)
        #expect(own.count == 1)
        #expect(own[0][context: 5]?.stringValue == "Home")
    }

    @Test func attestationSignsElementsWithTheSessionChallenge() throws {
        let fixture = try MatterNodeFixture()
        let nonce = [UInt8](repeating: 0x42, count: 32)
        let response = try fixture.invokeForResponse(0, 0x003E, 0x00, as: pase) {
            TLVElement(context: 0, .bytes(nonce))
        }
        let elementsBytes = try #require(response[context: 0]?.bytesValue)
        let elements = try TLVElement(decoding: elementsBytes)
        #expect(elements[context: 1]?.bytesValue == StandInAttestation().certificationDeclaration)
        #expect(elements[context: 2]?.bytesValue == nonce)
        #expect(elements[context: 3]?.unsignedValue == 0)
        let signed = elementsBytes + [UInt8](repeating: 7, count: 16)
        #expect(response[context: 1]?.bytesValue == (try StandInAttestation().signWithDeviceAttestationKey(signed)))
        // A nonce of the wrong length is an invalid command.
        #expect(
            try fixture.invokeStatus(0, 0x003E, 0x00, as: pase) { TLVElement(context: 0, .bytes([1, 2])) }
                == .invalidCommand)
        let dac = try fixture.invokeForResponse(0, 0x003E, 0x02, as: pase) { TLVElement(context: 0, .uint(UInt8(1))) }
        #expect(dac[context: 0]?.bytesValue == StandInAttestation().deviceAttestationCertificate)
        let pai = try fixture.invokeForResponse(0, 0x003E, 0x02, as: pase) { TLVElement(context: 0, .uint(UInt8(2))) }
        #expect(pai[context: 0]?.bytesValue == StandInAttestation().productAttestationIntermediate)
        #expect(
            try fixture.invokeStatus(0, 0x003E, 0x02, as: pase) { TLVElement(context: 0, .uint(UInt8(3))) }
                == .invalidCommand)
    }

    @Test func aStorageFailureAtCommissioningCompleteKeepsTheFailSafe() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        fixture.storage.isFailing = true
        #expect(try fixture.completeCommissioning(fabric: index) != 0)
        #expect(fixture.node.commissioning.isFailSafeArmed)
        fixture.storage.isFailing = false
        #expect(try fixture.completeCommissioning(fabric: index) == 0)
    }

    @Test func nodeLabelIsWrittenAndKept() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let path = AttributePath(endpoint: 0, cluster: 0x0028, attribute: 5)
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: path, data: .utf8("Kitchen hub"))], as: admin)
                == [.success])
        #expect(
            try fixture.write(
                [AttributeDataIB(dataVersion: nil, path: path, data: .utf8(String(repeating: "x", count: 33)))],
                as: admin) == [.constraintError])
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: path, data: .unsigned(3))], as: admin) == [
                .invalidDataType
            ])
        #expect(
            try fixture.write(
                [
                    AttributeDataIB(
                        dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x0028, attribute: 1),
                        data: .utf8("x"))
                ], as: admin) == [.unsupportedWrite])
        let restarted = try MatterNodeFixture(storage: fixture.storage)
        #expect(try restarted.readValue(0, 0x0028, 5, as: admin) == .utf8("Kitchen hub"))
    }
}
