import HearthHub

/// The backup archive an admin uploads to restore (`BackupArchive.read`): the bytes as they arrive.
///
/// Promises: any bytes give members or a `BackupArchiveError` with a message, never a crash; what is read has only
/// known, unique, relative names without `.` or `..` parts, each member within its size limit; written back with
/// `BackupArchive.write` the members read the same.
enum BackupArchiveTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        switch Result(catching: { () throws(BackupArchiveError) -> [BackupMember] in try BackupArchive.read(bytes) }) {
        case .failure(let error):
            try require(!error.description.isEmpty, "a refusal without a message")
        case .success(let members):
            var names: Set<String> = []
            for m in members {
                try require(BackupArchive.MemberName.isKnown(m.name), "an unknown member was read: '\(shown(m.name))'")
                try require(names.insert(m.name).inserted, "'\(shown(m.name))' was read twice")
                try require(
                    !m.name.hasPrefix("/") && !m.name.split(separator: "/").contains { $0 == ".." || $0 == "." },
                    "an unsafe name was read: '\(shown(m.name))'")
                try require(m.bytes.count <= BackupArchive.maximumMemberSize, "'\(m.name)' is beyond the member limit")
            }
            let again = Result { () throws(BackupArchiveError) -> [BackupMember] in
                try BackupArchive.read(BackupArchive.write(members))
            }
            try require((try? again.get()) == members, "the archive's members written back read differently")
        }
    }
}
