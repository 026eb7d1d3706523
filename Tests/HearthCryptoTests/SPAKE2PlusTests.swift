@testable import HearthCrypto
import Testing

/// SPAKE2+ vectors from connectedhomeip's src/crypto/tests/SPAKE2P_RFC_test_vectors.h (Project CHIP Authors,
/// Apache-2.0): draft-bar-cfrg-spake2plus-01's P256-SHA256-HKDF-HMAC vectors, the key schedule Matter uses.
struct SPAKE2PlusVector: Sendable, CustomTestStringConvertible {
    var name: String
    var context: [UInt8]
    var proverIdentity: [UInt8]
    var verifierIdentity: [UInt8]
    var w0, w1, L, x, X, y, Y, Z, V, Ka, Ke, KcA, KcB, macKcA, macKcB: [UInt8]
    var testDescription: String { name }
}

let spake2PlusVectors: [SPAKE2PlusVector] = [
    SPAKE2PlusVector(
        name: "client/server",
        context: Array("SPAKE2+-P256-SHA256-HKDF draft-01".utf8),
        proverIdentity: Array("client".utf8), verifierIdentity: Array("server".utf8),
        w0: hex("e6887cf9bdfb7579c69bf47928a84514b5e355ac034863f7ffaf4390e67d798c"),
        w1: hex("24b5ae4abda868ec9336ffc3b78ee31c5755bef1759227ef5372ca139b94e512"),
        L: hex("""
            0495645cfb74df6e58f9748bb83a86620bab7c82e107f57d6870da8cbcb2ff9f70\
            63a14b6402c62f99afcb9706a4d1a143273259fe76f1c605a3639745a92154b9
            """),
        x: hex("8b0f3f383905cf3a3bb955ef8fb62e24849dd349a05ca79aafb18041d30cbdb6"),
        X: hex("""
            04af09987a593d3bac8694b123839422c3cc87e37d6b41c1d630f000dd64980e53\
            7ae704bcede04ea3bec9b7475b32fa2ca3b684be14d11645e38ea6609eb39e7e
            """),
        y: hex("2e0895b0e763d6d5a9564433e64ac3cac74ff897f6c3445247ba1bab40082a91"),
        Y: hex("""
            04417592620aebf9fd203616bbb9f121b730c258b286f890c5f19fea833a9c900c\
            be9057bc549a3e19975be9927f0e7614f08d1f0a108eede5fd7eb5624584a4f4
            """),
        Z: hex("""
            0471a35282d2026f36bf3ceb38fcf87e3112a4452f46e9f7b47fd769cfb570145b\
            62589c76b7aa1eb6080a832e5332c36898426912e29c40ef9e9c742eee82bf30
            """),
        V: hex("""
            046718981bf15bc4db538fc1f1c1d058cb0eececf1dbe1b1ea08a4e25275d382e8\
            2b348c8131d8ed669d169c2e03a858db7cf6ca2853a4071251a39fbe8cfc39bc
            """),
        Ka: hex("f9cab9adcc0ed8e5a4db11a8505914b2"), Ke: hex("801db297654816eb4f02868129b9dc89"),
        KcA: hex("0d248d7d19234f1486b2efba5179c52d"), KcB: hex("556291df26d705a2caedd6474dd0079b"),
        macKcA: hex("d4376f2da9c72226dd151b77c2919071155fc22a2068d90b5faa6c78c11e77dd"),
        macKcB: hex("0660a680663e8c5695956fb22dff298b1d07a526cf3cc591adfecd1f6ef6e02e")),
    SPAKE2PlusVector(
        name: "client/no verifier identity",
        context: Array("SPAKE2+-P256-SHA256-HKDF draft-01".utf8),
        proverIdentity: Array("client".utf8), verifierIdentity: [],
        w0: hex("e6887cf9bdfb7579c69bf47928a84514b5e355ac034863f7ffaf4390e67d798c"),
        w1: hex("24b5ae4abda868ec9336ffc3b78ee31c5755bef1759227ef5372ca139b94e512"),
        L: hex("""
            0495645cfb74df6e58f9748bb83a86620bab7c82e107f57d6870da8cbcb2ff9f70\
            63a14b6402c62f99afcb9706a4d1a143273259fe76f1c605a3639745a92154b9
            """),
        x: hex("ec82d9258337f61239c9cd68e8e532a3a6b83d12d2b1ca5d543f44def17dfb8d"),
        X: hex("""
            04230779960824076d3666a7418e4d433e2fa15b06176eabdd572f43a32ecc79a1\
            92b243d2624310a7356273b86e5fd9bd627d3ade762baeff1a320d4ad7a4e47f
            """),
        y: hex("eac3f7de4b198d5fe25c443c0cd4963807add767815dd02a6f0133b4bc2c9eb0"),
        Y: hex("""
            044558642e71b616b248c9583bd6d7aa1b3952c6df6a9f7492a06035ca5d92522d\
            84443de7aa20a59380fa4de6b7438d925dbfb7f1cfe60d79acf961ee33988c7d
            """),
        Z: hex("""
            04b4e8770f19f58ddf83f9220c3a9305792665e0c60989e6ee9d7fa449c775d639\
            5f6f25f307e3903ac045a013fbb5a676e872a6abfcf4d7bb5aac69efd6140eed
            """),
        V: hex("""
            04141db83bc7d96f41b636622e7a5c552ad83211ff55319ac25ed0a09f0818bd94\
            2e8150319bfbfa686183806dc61911183f6a0f5956156023d96e0f93d275bf50
            """),
        Ka: hex("e2cbee3ae19a4dbe9f146be6bee9bfa1"), Ke: hex("6989d8f9177ef7df67da437987f07255"),
        KcA: hex("2f9e0bb669d2c22645bce34da04ac16a"), KcB: hex("eb7a35168759dd8e9ce44e4dc51277ce"),
        macKcA: hex("e1b9258807ba4750dae1d7f3c3c294f13dc4fa60cde346d5de7d200e2f8fd3fc"),
        macKcB: hex("b9c39dfa49c47757de778d9bedeaca2448b905be19a43b94ee24b770208135e3")),
]

@Suite struct SPAKE2PlusTests {
    @Test(arguments: spake2PlusVectors)
    func verifierMatchesPublishedVector(_ v: SPAKE2PlusVector) throws {
        var verifier = try SPAKE2Plus.Verifier(
            context: v.context, w0: try P256.Scalar(rawRepresentation: v.w0), L: try P256.Point(sec1: v.L),
            proverIdentity: v.proverIdentity, verifierIdentity: v.verifierIdentity,
            y: try P256.Scalar(rawRepresentation: v.y))
        let (pB, cB) = try verifier.respond(to: v.X)
        #expect(pB == v.Y)
        #expect(cB == v.macKcB)
        #expect(verifier.sharedKey == nil)
        try verifier.verify(cA: v.macKcA)
        #expect(verifier.sharedKey == v.Ke)
    }

    @Test(arguments: spake2PlusVectors)
    func proverMatchesPublishedVector(_ v: SPAKE2PlusVector) throws {
        var prover = try SPAKE2Plus.Prover(
            context: v.context, w0: try P256.Scalar(rawRepresentation: v.w0),
            w1: try P256.Scalar(rawRepresentation: v.w1), proverIdentity: v.proverIdentity,
            verifierIdentity: v.verifierIdentity, x: try P256.Scalar(rawRepresentation: v.x))
        #expect(prover.pA == v.X)
        let cA = try prover.finish(pB: v.Y, cB: v.macKcB)
        #expect(cA == v.macKcA)
        #expect(prover.sharedKey == v.Ke)
    }

    @Test(arguments: spake2PlusVectors)
    func keyScheduleMatchesPublishedVector(_ v: SPAKE2PlusVector) throws {
        let keys = try SPAKE2Plus.KeySchedule(context: v.context, proverIdentity: v.proverIdentity,
                                              verifierIdentity: v.verifierIdentity, x: v.X, y: v.Y, z: v.Z, v: v.V,
                                              w0: v.w0)
        #expect(keys.ka == v.Ka && keys.ke == v.Ke && keys.kcA == v.KcA && keys.kcB == v.KcB)
        #expect(try SPAKE2Plus.computeL(w1: P256.Scalar(rawRepresentation: v.w1)).sec1Uncompressed == v.L)
    }

    /// connectedhomeip's test commissioning data: passcode 20202021, salt "SPAKE2P Key Salt", 1000 iterations give
    /// the verifier (w0 ‖ L) "uWFwqugDNGiEck/po7KHwwMwwqZgN10XuyBajPGuyzUEV/iree4lOrao5GuwnlQ65CJzbeUB49s31EH+NEkg0JVI5
    /// MGCQGMMT/SRPFNRODm3wH/MBiehuFc6FJ/NH6Rmzw==" (its examples' CHIP test SPAKE2+ verifier), decoded here.
    @Test func matterTestVerifierFromPasscode() throws {
        let (w0, L) = try SPAKE2Plus.computeVerifier(passcode: 20202021, salt: Array("SPAKE2P Key Salt".utf8),
                                                     iterations: 1000)
        #expect(w0.rawRepresentation == hex("b96170aae803346884724fe9a3b287c30330c2a660375d17bb205a8cf1aecb35"))
        #expect(try L.sec1Uncompressed == hex("""
            0457f8ab79ee253ab6a8e46bb09e543ae422736de501e3db37d441fe344920d095\
            48e4c18240630c4ff4913c53513839b7c07fcc0627a1b8573a149fcd1fa466cf
            """))
    }

    @Test func proverAndVerifierAgreeWithMatterContext() throws {
        let salt = Array("SPAKE2P Key Salt".utf8)
        let context = SPAKE2Plus.matterContext(pbkdfParamRequest: [0x15, 0x18], pbkdfParamResponse: [0x15, 0x30, 0x18])
        let (w0, w1) = try SPAKE2Plus.computeW0W1(passcode: 20202021, salt: salt, iterations: 1000)
        var prover = try SPAKE2Plus.Prover(context: context, w0: w0, w1: w1)
        var verifier = try SPAKE2Plus.Verifier(context: context, w0: w0.rawRepresentation,
                                               L: try SPAKE2Plus.computeL(w1: w1).sec1Uncompressed)
        let (pB, cB) = try verifier.respond(to: prover.pA)
        let cA = try prover.finish(pB: pB, cB: cB)
        try verifier.verify(cA: cA)
        #expect(verifier.sharedKey != nil)
        #expect(verifier.sharedKey == prover.sharedKey)
        #expect(verifier.sharedKey?.count == 16)
    }

    @Test func wrongPasscodeFailsConfirmation() throws {
        let salt = Array("SPAKE2P Key Salt".utf8)
        let context = [UInt8](repeating: 7, count: 32)
        let (w0, L) = try SPAKE2Plus.computeVerifier(passcode: 20202021, salt: salt, iterations: 1000)
        let (wrongW0, wrongW1) = try SPAKE2Plus.computeW0W1(passcode: 20202022, salt: salt, iterations: 1000)
        var prover = try SPAKE2Plus.Prover(context: context, w0: wrongW0, w1: wrongW1)
        var verifier = try SPAKE2Plus.Verifier(context: context, w0: w0, L: L)
        let (pB, cB) = try verifier.respond(to: prover.pA)
        #expect(throws: CryptoError.self) { try prover.finish(pB: pB, cB: cB) }
        #expect(throws: CryptoError(operation: "SPAKE2+ verify", reason: "confirmation cA does not match")) {
            try verifier.verify(cA: [UInt8](repeating: 0, count: 32))
        }
        #expect(verifier.sharedKey == nil)
    }

    @Test func verifierRefusesBadShares() throws {
        let (w0, L) = try SPAKE2Plus.computeVerifier(passcode: 20202021, salt: Array("SPAKE2P Key Salt".utf8),
                                                     iterations: 1000)
        var verifier = try SPAKE2Plus.Verifier(context: [], w0: w0, L: L)
        #expect(throws: CryptoError.self) { try verifier.respond(to: [0x04] + [UInt8](repeating: 1, count: 64)) }
        #expect(throws: CryptoError.self) { try verifier.respond(to: [0x00]) }
        #expect(throws: CryptoError.self) {
            try verifier.respond(to: try SPAKE2Plus.m.sec1Uncompressed.dropLast(1).map { $0 })
        }
        // w0·M makes X − w0·M the point at infinity.
        #expect(throws: CryptoError(operation: "SPAKE2+ respond", reason: "degenerate share pA")) {
            try verifier.respond(to: try (SPAKE2Plus.m * w0).sec1Uncompressed)
        }
        #expect(throws: CryptoError(operation: "SPAKE2+ verify", reason: "no share answered yet")) {
            try verifier.verify(cA: [])
        }
        #expect(String(describing: verifier) == "SPAKE2Plus.Verifier(redacted)")
    }
}

/// RFC 9383 appendix C, the P256-SHA256-HKDF-SHA256-HMAC-SHA256 vector. RFC 9383's key schedule after
/// K_main = SHA-256(TT) is not Matter's (draft-01 splits K_main into Ka ‖ Ke), so this checks what the two share:
/// M and N, the shares X and Y, Z and V, and the transcript TT.
@Suite struct SPAKE2PlusRFC9383Tests {
    static let context = Array("SPAKE2+-P256-SHA256-HKDF-SHA256-HMAC-SHA256 Test Vectors".utf8)
    static let w0 = hex("bb8e1bbcf3c48f62c08db243652ae55d3e5586053fca77102994f23ad95491b3")
    static let w1 = hex("7e945f34d78785b8a3ef44d0df5a1a97d6b3b460409a345ca7830387a74b1dba")
    static let L = hex("""
        04eb7c9db3d9a9eb1f8adab81b5794c1f13ae3e225efbe91ea487425854c7fc00f\
        00bfedcbd09b2400142d40a14f2064ef31dfaa903b91d1faea7093d835966efd
        """)
    static let x = hex("d1232c8e8693d02368976c174e2088851b8365d0d79a9eee709c6a05a2fad539")
    static let X = hex("""
        04ef3bd051bf78a2234ec0df197f7828060fe9856503579bb1733009042c15c0c1\
        de127727f418b5966afadfdd95a6e4591d171056b333dab97a79c7193e341727
        """)
    static let y = hex("717a72348a182085109c8d3917d6c43d59b224dc6a7fc4f0483232fa6516d8b3")
    static let Y = hex("""
        04c0f65da0d11927bdf5d560c69e1d7d939a05b0e88291887d679fcadea75810fb\
        5cc1ca7494db39e82ff2f50665255d76173e09986ab46742c798a9a68437b048
        """)
    static let Z = hex("""
        04bbfce7dd7f277819c8da21544afb7964705569bdf12fb92aa388059408d50091\
        a0c5f1d3127f56813b5337f9e4e67e2ca633117a4fbd559946ab474356c41839
        """)
    static let V = hex("""
        0458bf27c6bca011c9ce1930e8984a797a3419797b936629a5a937cf2f11c8b951\
        4b82b993da8a46e664f23db7c01edc87faa530db01c2ee405230b18997f16b68
        """)
    static let kMain = hex("4c59e1ccf2cfb961aa31bd9434478a1089b56cd11542f53d3576fb6c2a438a29")

    @Test func transcriptHashIsKMain() throws {
        let keys = try SPAKE2Plus.KeySchedule(context: Self.context, proverIdentity: Array("client".utf8),
                                              verifierIdentity: Array("server".utf8), x: Self.X, y: Self.Y,
                                              z: Self.Z, v: Self.V, w0: Self.w0)
        #expect(keys.ka + keys.ke == Self.kMain)
        #expect(try SPAKE2Plus.computeL(w1: P256.Scalar(rawRepresentation: Self.w1)).sec1Uncompressed == Self.L)
    }

    /// The shares are the RFC's, and the confirmations are the ones Z and V as published give: so Z and V are too.
    @Test func sharesZAndVMatch() throws {
        let identities = (prover: Array("client".utf8), verifier: Array("server".utf8))
        let expected = try SPAKE2Plus.KeySchedule(context: Self.context, proverIdentity: identities.prover,
                                                  verifierIdentity: identities.verifier, x: Self.X, y: Self.Y,
                                                  z: Self.Z, v: Self.V, w0: Self.w0)
        var verifier = try SPAKE2Plus.Verifier(
            context: Self.context, w0: try P256.Scalar(rawRepresentation: Self.w0), L: try P256.Point(sec1: Self.L),
            proverIdentity: identities.prover, verifierIdentity: identities.verifier,
            y: try P256.Scalar(rawRepresentation: Self.y))
        var prover = try SPAKE2Plus.Prover(
            context: Self.context, w0: try P256.Scalar(rawRepresentation: Self.w0),
            w1: try P256.Scalar(rawRepresentation: Self.w1), proverIdentity: identities.prover,
            verifierIdentity: identities.verifier, x: try P256.Scalar(rawRepresentation: Self.x))
        #expect(prover.pA == Self.X)
        let (pB, cB) = try verifier.respond(to: prover.pA)
        #expect(pB == Self.Y)
        #expect(cB == HMACSHA256.authenticationCode(key: expected.kcB, data: Self.X))
        let cA = try prover.finish(pB: pB, cB: cB)
        #expect(cA == HMACSHA256.authenticationCode(key: expected.kcA, data: Self.Y))
        try verifier.verify(cA: cA)
        #expect(verifier.sharedKey == expected.ke && prover.sharedKey == expected.ke)
    }
}
