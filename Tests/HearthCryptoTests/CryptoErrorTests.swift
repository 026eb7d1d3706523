import HearthCrypto
import Testing

@Test func cryptoErrorSaysWhatFailed() {
    #expect(CryptoError(operation: "AES-CCM open", reason: "tag mismatch").description == "AES-CCM open: tag mismatch")
}
