import HearthCrypto
import Testing

/// AES-CCM-128 vectors with Matter's parameters (13-byte nonce, 16-byte tag): the "Matter-compliant" test vectors
/// (tcId 4, 5, 10–14) of connectedhomeip's src/crypto/tests/AES_CCM_128_test_vectors.h (Project CHIP Authors,
/// Apache-2.0), kept as test data.
struct CCMVector: Sendable, CustomTestStringConvertible {
    var tcId: Int
    var key: [UInt8]
    var nonce: [UInt8]
    var plaintext: [UInt8]
    var authenticatedData: [UInt8]
    var ciphertext: [UInt8]
    var tag: [UInt8]
    var testDescription: String { "tcId \(tcId)" }
}

let matterCCMVectors: [CCMVector] = [
    CCMVector(tcId: 4, key: hex("be635105434859f484fc798e043ce40e"),
              nonce: hex("00800148342345000012345678"), plaintext: hex("120102001234567800"), authenticatedData: [],
              ciphertext: hex("5c39da1792b1fee9ec"), tag: hex("a9233958aced64f2343b9d610e876440")),
    CCMVector(tcId: 5, key: hex("0953fa93e7caac9638f58820220a398e"),
              nonce: hex("008b0148352345000012345678"), plaintext: hex("000300a6ac00000002"), authenticatedData: [],
              ciphertext: hex("0d0d730f94d7f3509d"), tag: hex("dda1694adb791652fb6ae04682f19b29")),
    CCMVector(tcId: 10, key: hex("63964771734fbd76e3b40519d1d94a48"),
              nonce: hex("010007080d1234973612345677"), plaintext: hex("ea0a00576f726c64"),
              authenticatedData: hex("f4a002c7fb1e4ca0a469a021de0db875"),
              ciphertext: hex("de1547118463123e"), tag: hex("14604c1ddb4f5987064b1736f3923962")),
    CCMVector(tcId: 11, key: hex("08b0da255d2083808a1b4d367090bacc"),
              nonce: hex("777828b13679a9e2ca89568233"), plaintext: [], authenticatedData: hex("c5"),
              ciphertext: [], tag: hex("0a93ec4a8ff33964f58005868a868856")),
    CCMVector(tcId: 12, key: hex("08b0da255d2083808a1b4d367090bacc"),
              nonce: hex("777828b13679a9e2ca89568233"), plaintext: hex("3a7f9b1d2e4c6a8f0b5d1c3e7a6d9f20"),
              authenticatedData: hex("c5"),
              ciphertext: hex("c9d2fc9793b6f73a90d326816f52c16a"), tag: hex("e4e24567106d61bf5040b26fbaa68a58")),
    CCMVector(tcId: 13, key: hex("08b0da255d2083808a1b4d367090bacc"),
              nonce: hex("777828b13679a9e2ca89568233"),
              plaintext: hex("e41a9f3c6d2b81745c0e3f1d89ab5d26f3c7e890bd12a45b"), authenticatedData: hex("c5"),
              ciphertext: hex("17b7f8b6d0d11cc1c78005a29c94036ca9f376fb1b041005"),
              tag: hex("d0350a3c8db3cd8512f45f35432cb70d")),
    CCMVector(tcId: 14, key: hex("08b0da255d2083808a1b4d367090bacc"),
              nonce: hex("777828b13679a9e2ca89568233"),
              plaintext: hex("d84f9a2c3b71e56f08a1d3c9be427a9f14c26e8d9b703fa1e36b8c9d24f0a7bd"),
              authenticatedData: hex("c5"),
              ciphertext: hex("2be2fda6868b78da932fe976ab7d24d54ef6f0e63d668bff9dbb2219cbbe0e38"),
              tag: hex("137ac1c885859b9695d7e807194e86af")),
]

@Suite struct AESCCMTests {
    @Test(arguments: matterCCMVectors)
    func sealMatchesPublishedVector(_ vector: CCMVector) throws {
        let sealed = try AESCCM128.seal(key: vector.key, nonce: vector.nonce, plaintext: vector.plaintext,
                                        authenticatedData: vector.authenticatedData)
        #expect(sealed == vector.ciphertext + vector.tag)
    }

    @Test(arguments: matterCCMVectors)
    func openMatchesPublishedVector(_ vector: CCMVector) throws {
        let opened = try AESCCM128.open(
            key: vector.key, nonce: vector.nonce, ciphertextAndTag: vector.ciphertext + vector.tag,
            authenticatedData: vector.authenticatedData)
        #expect(opened == vector.plaintext)
    }

    @Test(arguments: matterCCMVectors)
    func tamperedMessageIsRefused(_ vector: CCMVector) throws {
        var sealed = vector.ciphertext + vector.tag
        sealed[sealed.count - 1] ^= 0x01
        #expect(throws: CryptoError.self) {
            try AESCCM128.open(key: vector.key, nonce: vector.nonce, ciphertextAndTag: sealed,
                               authenticatedData: vector.authenticatedData)
        }
        if !vector.ciphertext.isEmpty {
            var flipped = vector.ciphertext + vector.tag
            flipped[0] ^= 0x80
            #expect(throws: CryptoError.self) {
                try AESCCM128.open(key: vector.key, nonce: vector.nonce, ciphertextAndTag: flipped,
                                   authenticatedData: vector.authenticatedData)
            }
        }
        #expect(throws: CryptoError.self) {
            try AESCCM128.open(key: vector.key, nonce: vector.nonce, ciphertextAndTag: vector.ciphertext + vector.tag,
                               authenticatedData: vector.authenticatedData + [0])
        }
    }

    @Test func wrongSizesAreRefusedWithReasons() {
        #expect(throws: CryptoError(operation: "AES-CCM seal", reason: "key is 15 bytes, not 16")) {
            try AESCCM128.seal(key: [UInt8](repeating: 0, count: 15), nonce: [UInt8](repeating: 0, count: 13),
                               plaintext: [], authenticatedData: [])
        }
        #expect(throws: CryptoError(operation: "AES-CCM seal", reason: "nonce is 12 bytes, not 13")) {
            try AESCCM128.seal(key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12),
                               plaintext: [], authenticatedData: [])
        }
        #expect(throws: CryptoError(operation: "AES-CCM open", reason: "15 bytes, shorter than the tag")) {
            try AESCCM128.open(key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 13),
                               ciphertextAndTag: [UInt8](repeating: 0, count: 15), authenticatedData: [])
        }
    }

    /// Matter's privacy encryption is AES-CCM's keystream: CTR over the data equals CCM's ciphertext without tag.
    @Test(arguments: matterCCMVectors)
    func counterModeIsCCMKeystream(_ vector: CCMVector) throws {
        let encrypted = try AESCTR128.apply(key: vector.key, nonce: vector.nonce, data: vector.plaintext)
        #expect(encrypted == vector.ciphertext)
        #expect(try AESCTR128.apply(key: vector.key, nonce: vector.nonce, data: encrypted) == vector.plaintext)
    }
}
