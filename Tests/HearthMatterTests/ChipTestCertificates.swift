// Test data: operational certificates published by connectedhomeip for its own tests
// (project-chip/connectedhomeip, src/credentials/tests/CHIPCert_test_vectors.cpp, Apache-2.0): each in its Matter TLV
// form (the `sTestCert_*_Chip` arrays) and its X.509 form (the PEM blocks beside them), the same certificate both
// ways. Chains: Root01 → ICA01 → Node01_01; Root01 → Node01_02; Root03 never expires; FWSign01 has a common name.

enum ChipTestCertificates {
    struct Pair {
        var name: String
        var tlvHex: String
        var pem: String
        var tlv: [UInt8] { Hex.bytes(tlvHex) }
        var der: [UInt8] { Base64.decode(pem) }
    }

    static let root01 = Pair(name: "Root01", tlvHex: """
        153001085 34c4582736235142402013703271401000000cacacaca182604ef171b2726056eb5b94c37062714010000 00cacacaca18
        2407012408013009410 43b88460ec9687a5d0f3b4b3b13fcd299c2f6d5051d003ee49c9924cf98f4f780eb20fd37c8d358347f
        5f87d08c3213e540af11bab9137e49354f0c5b6343de63370a350129011824026030041 4cc1308af82cfee505eb23b57bfe86a3116
        65535f300514cc1308af82cfee505eb23b57bfe86a311665535f18300b40f7f0092690494e46c8b1c5cbd1a5085e1e65d4360f98
        e96c4e8e495dc5e216d0bfa23d8f57470d89fddaf03f0464b0ae8e1f956d6f67a311243858246897 80a918
        """, pem: """
        MIIBnjCCAUOgAwIBAgIIU0xFgnNiNRQwCgYIKoZIzj0EAwIwIjEgMB4GCisGAQQB
        gqJ8AQQMEENBQ0FDQUNBMDAwMDAwMDEwHhcNMjAxMDE1MTQyMzQzWhcNNDAxMDE1
        MTQyMzQyWjAiMSAwHgYKKwYBBAGConwBBAwQQ0FDQUNBQ0EwMDAwMDAwMTBZMBMG
        ByqGSM49AgEGCCqGSM49AwEHA0IABDuIRg7JaHpdDztLOxP80pnC9tUFHQA+5JyZ
        JM+Y9PeA6yD9N8jTWDR/X4fQjDIT5UCvEbq5E35JNU8MW2ND3mOjYzBhMA8GA1Ud
        EwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBTMEwivgs/uUF6y
        O1e/6GoxFmVTXzAfBgNVHSMEGDAWgBTMEwivgs/uUF6yO1e/6GoxFmVTXzAKBggq
        hkjOPQQDAgNJADBGAiEA9/AJJpBJTkbIscXL0aUIXh5l1DYPmOlsTo5JXcXiFtAC
        IQC/oj2PV0cNif3a8D8EZLCujh+VbW9noxEkOFgkaJeAqQ==
        """)

    static let root03 = Pair(name: "Root03", tlvHex: """
        153001086b787a6dfcd4bf81240201370327140200 0000cacacaca27151d0000000000b0fa182604ef171b27240500370627140200
        0000cacacaca27151d0000000000b0fa182407012408013009410471 05408a85a9d9a08af8b77077db388b7ea43897dcdfd316f2
        4f0a7e71de69a50c44550c0c9da2361cd829e55fdd63ccf579ed44e02208b4f825fcd6f0682c02370a35012901240201182402 60
        300414ff87f3cdd2069aef8d5d32eba3163b9eb00a0029300514ff87f3cdd2069aef8d5d32eba3163b9eb00a002918300b4075f670
        eb3545b99786466799ebea4051a341af2a9b677fd71b4c3d4e68093b665f2842cb7ed3199c9ad7c9627947a18a92168afcd65f3e9c
        af6eedfa9e60c52f18
        """, pem: """
        MIIB5TCCAYygAwIBAgIIa3h6bfzUv4EwCgYIKoZIzj0EAwIwRDEgMB4GCisGAQQB
        gqJ8AQQMEENBQ0FDQUNBMDAwMDAwMDIxIDAeBgorBgEEAYKifAEFDBBGQUIwMDAw
        MDAwMDAwMDFEMCAXDTIwMTAxNTE0MjM0M1oYDzk5OTkxMjMxMjM1OTU5WjBEMSAw
        HgYKKwYBBAGConwBBAwQQ0FDQUNBQ0EwMDAwMDAwMjEgMB4GCisGAQQBgqJ8AQUM
        EEZBQjAwMDAwMDAwMDAwMUQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARxBUCK
        hanZoIr4t3B32ziLfqQ4l9zf0xbyTwp+cd5ppQxEVQwMnaI2HNgp5V/dY8z1ee1E
        4CIItPgl/NbwaCwCo2YwZDASBgNVHRMBAf8ECDAGAQH/AgEBMA4GA1UdDwEB/wQE
        AwIBBjAdBgNVHQ4EFgQU/4fzzdIGmu+NXTLroxY7nrAKACkwHwYDVR0jBBgwFoAU
        /4fzzdIGmu+NXTLroxY7nrAKACkwCgYIKoZIzj0EAwIDRwAwRAIgdfZw6zVFuZeG
        RmeZ6+pAUaNBryqbZ3/XG0w9TmgJO2YCIF8oQst+0xmcmtfJYnlHoYqSFor81l8+
        nK9u7fqeYMUv
        """)

    static let ica01 = Pair(name: "ICA01", tlvHex: """
        1530010869d86a8d80fc8f5d24020137032714010000 00cacacaca182604ef171b2726056eb5b94c370627130300 0000cacacaca18
        24070124080130094104 5f94f57e0b13c9cfcf96dfe1fce7888d564cc209c55c4508e44dcf16ba2e09662f9eecf19f40b0e88a0b
        2815da9ee10a3a177c251f434f5b0f263ce7de6278c6370a3501290118240260300414440cc69231c4cb5b37942426f81bbe24b7ef
        345c300514cc1308af82cfee505eb23b57bfe86a311665535f18300b40adb85b5d68cbfd36140d8c9d129014c45fa7ca191f34d9af
        241db71736e60f44199bc07c7f795bed81a2e77dc5342576f6a0d14198f46b910749427c2eed659c18
        """, pem: """
        MIIBnTCCAUOgAwIBAgIIadhqjYD8j10wCgYIKoZIzj0EAwIwIjEgMB4GCisGAQQB
        gqJ8AQQMEENBQ0FDQUNBMDAwMDAwMDEwHhcNMjAxMDE1MTQyMzQzWhcNNDAxMDE1
        MTQyMzQyWjAiMSAwHgYKKwYBBAGConwBAwwQQ0FDQUNBQ0EwMDAwMDAwMzBZMBMG
        ByqGSM49AgEGCCqGSM49AwEHA0IABF+U9X4LE8nPz5bf4fzniI1WTMIJxVxFCORN
        zxa6LglmL57s8Z9AsOiKCygV2p7hCjoXfCUfQ09bDyY8595ieMajYzBhMA8GA1Ud
        EwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBREDMaSMcTLWzeU
        JCb4G74kt+80XDAfBgNVHSMEGDAWgBTMEwivgs/uUF6yO1e/6GoxFmVTXzAKBggq
        hkjOPQQDAgNIADBFAiEArbhbXWjL/TYUDYydEpAUxF+nyhkfNNmvJB23FzbmD0QC
        IBmbwHx/eVvtgaLnfcU0JXb2oNFBmPRrkQdJQnwu7WWc
        """)

    static let node01_01 = Pair(name: "Node01_01", tlvHex: """
        1530010818e969ba0e089e2324020137032713030000 00cacacaca182604ef171b2726056eb5b94c370627110100010 0dededede
        27151d0000000000b0fa182407012408013009410 4bcf6580d2d71e14416651f7c311b5efcf9aec0a8c10af80927844c240f51a8eb
        23fa0744138887ac1e73cb72a054b6a0db0622aa807071016313b1596c8552cf370a350128011824020136030402040118300414
        6967c912f8a3e689556f899b65d76f53fa65c7b6300514440cc69231c4cb5b37942426f81bbe24b7ef345c18300b40ce6ef393cbbc
        94f80ee290cb3c3d373335bab95907734d99d384a62a373b8484e1d41a04c3140faa19e8a2b99b0c61e33c27ea913973e45b5bc6e3
        9c270dac5318
        """, pem: """
        MIIB4TCCAYagAwIBAgIIGOlpug4IniMwCgYIKoZIzj0EAwIwIjEgMB4GCisGAQQB
        gqJ8AQMMEENBQ0FDQUNBMDAwMDAwMDMwHhcNMjAxMDE1MTQyMzQzWhcNNDAxMDE1
        MTQyMzQyWjBEMSAwHgYKKwYBBAGConwBAQwQREVERURFREUwMDAxMDAwMTEgMB4G
        CisGAQQBgqJ8AQUMEEZBQjAwMDAwMDAwMDAwMUQwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAAS89lgNLXHhRBZlH3wxG178+a7AqMEK+AknhEwkD1Go6yP6B0QTiIes
        HnPLcqBUtqDbBiKqgHBxAWMTsVlshVLPo4GDMIGAMAwGA1UdEwEB/wQCMAAwDgYD
        VR0PAQH/BAQDAgeAMCAGA1UdJQEB/wQWMBQGCCsGAQUFBwMCBggrBgEFBQcDATAd
        BgNVHQ4EFgQUaWfJEvij5olVb4mbZddvU/plx7YwHwYDVR0jBBgwFoAURAzGkjHE
        y1s3lCQm+Bu+JLfvNFwwCgYIKoZIzj0EAwIDSQAwRgIhAM5u85PLvJT4DuKQyzw9
        NzM1urlZB3NNmdOEpio3O4SEAiEA4dQaBMMUD6oZ6KK5mwxh4zwn6pE5c+RbW8bj
        nCcNrFM=
        """)

    static let node01_02 = Pair(name: "Node01_02", tlvHex: """
        153001080d90935346b05cbc24020137032714010000 00cacacaca182604ef171b2726056eb5b94c3706271102000100dededede
        27151d0000000000b0fa18240701240801300941 04965f78c537ece1b8c34a7b98b9aa45f13563a502b1979a607bd0c41988bdd0f0
        bbb89816c207e3b515d9264159f78bd0978e32d74c6d055a149e8e9dba4019bf370a3501280118240201360304020401183004 14
        567b4f20e4b9c7bd27b29b3dce6a76f7cd8eccb6300514cc1308af82cfee505eb23b57bfe86a311665535f18300b406058114ba721
        82fcf6301f7a081bca5a848202431a52fdbff497d8dd6f9a59597badccd6a56d70efd8c97c496eba7e2801d7337dcff74d78e46ecd
        3a08ccbae318
        """, pem: """
        MIIB3zCCAYagAwIBAgIIDZCTU0awXLwwCgYIKoZIzj0EAwIwIjEgMB4GCisGAQQB
        gqJ8AQQMEENBQ0FDQUNBMDAwMDAwMDEwHhcNMjAxMDE1MTQyMzQzWhcNNDAxMDE1
        MTQyMzQyWjBEMSAwHgYKKwYBBAGConwBAQwQREVERURFREUwMDAxMDAwMjEgMB4G
        CisGAQQBgqJ8AQUMEEZBQjAwMDAwMDAwMDAwMUQwWTATBgcqhkjOPQIBBggqhkjO
        PQMBBwNCAASWX3jFN+zhuMNKe5i5qkXxNWOlArGXmmB70MQZiL3Q8Lu4mBbCB+O1
        FdkmQVn3i9CXjjLXTG0FWhSejp26QBm/o4GDMIGAMAwGA1UdEwEB/wQCMAAwDgYD
        VR0PAQH/BAQDAgeAMCAGA1UdJQEB/wQWMBQGCCsGAQUFBwMCBggrBgEFBQcDATAd
        BgNVHQ4EFgQUVntPIOS5x70nsps9zmp2982OzLYwHwYDVR0jBBgwFoAUzBMIr4LP
        7lBesjtXv+hqMRZlU18wCgYIKoZIzj0EAwIDRwAwRAIgYFgRS6chgvz2MB96CBvK
        WoSCAkMaUv2/9JfY3W+aWVkCIHutzNalbXDv2Ml8SW66figB1zN9z/dNeORuzToI
        zLrj
        """)

    static let fwSign01 = Pair(name: "FWSign01", tlvHex: """
        153001087a602b092372c1f824020137032713050000 00cacacaca182604ef171b2726056eb5b94c37062712010000 00ffffffff
        2c010f4657205349474e2043455254203031182407012408013009410 4fd2ae40a747c6d5ac6c8dc79612b9a853c3e0fb41c94ff08
        5b4e1d0224859865ea6c7d67bb888434a60d420fd2b99e942b6af8a50f1276535c4ff0326179dd78370a3501280118240201360304
        0318300414 5225d583fb718a7c6451fdaf922acd2d361005c7300514506fc3fcb7941588ea736c20652e5f1b11701c6a18300b40
        ed3ea416ed19690de52b38666d5a7be6e66209af294ea463b4951cadd7c46f5aa74a4d560f897d5365a89fde38f3f9117248391cf5
        bc7616f699085933d563c918
        """, pem: """
        MIIBzTCCAXKgAwIBAgIIemArCSNywfgwCgYIKoZIzj0EAwIwIjEgMB4GCisGAQQB
        gqJ8AQMMEENBQ0FDQUNBMDAwMDAwMDUwHhcNMjAxMDE1MTQyMzQzWhcNNDAxMDE1
        MTQyMzQyWjA8MSAwHgYKKwYBBAGConwBAgwQRkZGRkZGRkYwMDAwMDAwMTEYMBYG
        A1UEAwwPRlcgU0lHTiBDRVJUIDAxMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
        /SrkCnR8bVrGyNx5YSuahTw+D7QclP8IW04dAiSFmGXqbH1nu4iENKYNQg/SuZ6U
        K2r4pQ8SdlNcT/AyYXndeKN4MHYwDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMC
        B4AwFgYDVR0lAQH/BAwwCgYIKwYBBQUHAwMwHQYDVR0OBBYEFFIl1YP7cYp8ZFH9
        r5IqzS02EAXHMB8GA1UdIwQYMBaAFFBvw/y3lBWI6nNsIGUuXxsRcBxqMAoGCCqG
        SM49BAMCA0kAMEYCIQDtPqQW7RlpDeUrOGZtWnvm5mIJrylOpGO0lRyt18RvWgIh
        AKdKTVYPiX1TZaif3jjz+RFySDkc9bx2FvaZCFkz1WPJ
        """)

    static let all = [root01, root03, ica01, node01_01, node01_02, fwSign01]
}

/// Hex text to bytes; whitespace is ignored so that long values wrap.
enum Hex {
    static func bytes(_ text: String) -> [UInt8] {
        let digits = text.utf8.filter { !($0 == 0x20 || $0 == 0x0A) }
        var out: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(after: index)
            out.append(UInt8(value(digits[index]) << 4 | value(digits[next])))
            index = digits.index(after: next)
        }
        return out
    }

    static func string(_ bytes: [UInt8]) -> String {
        let alphabet = Array("0123456789abcdef")
        return String(bytes.flatMap { [alphabet[Int($0 >> 4)], alphabet[Int($0 & 15)]] })
    }

    private static func value(_ c: UInt8) -> Int {
        switch c {
        case 0x30...0x39: Int(c - 0x30)
        case 0x61...0x66: Int(c - 0x61 + 10)
        case 0x41...0x46: Int(c - 0x41 + 10)
        default: 0
        }
    }
}

/// Base64 text (PEM bodies) to bytes; line breaks and padding are skipped.
enum Base64 {
    static func decode(_ text: String) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            guard let value = alphabet.firstIndex(of: c) else { continue }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return out
    }
}
