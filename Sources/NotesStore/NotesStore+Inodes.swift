import Foundation
import SQLiteKit

// Inode numbers: a counter in the store that is never reused, mapped to
// entries. The root is always 1.
extension NotesStore {
    func inodeNumber(_ db: Connection, for ref: EntryRef) throws -> UInt64? {
        try db.queryOne(
            "SELECT ino FROM inodes WHERE entry_kind = ? AND entry_id = ?", ref.kindCode, ref.idText
        ) { UInt64($0.int64(0)) }
    }

    /// The inode number of `ref`, made from the counter the first time it is asked for.
    func inode(for ref: EntryRef) throws(StoreError) -> UInt64 {
        if ref == .root { return 1 }
        if let existing = try readOneStatement({ db in try inodeNumber(db, for: ref) }) { return existing }
        return try write(origin: .local, checkSpace: false) { db, _ in
            if let existing = try inodeNumber(db, for: ref) { return existing }
            try db.run("INSERT INTO inodes(entry_kind, entry_id) VALUES (?, ?)", ref.kindCode, ref.idText)
            return UInt64(db.lastInsertRowID)
        }
    }

    /// The entry an inode number stands for, or nil when it was replaced or deleted.
    func entryRef(forInode inode: UInt64) throws(StoreError) -> EntryRef? {
        if inode == 1 { return .root }
        return try readOneStatement { db in
            try db.queryOne("SELECT entry_kind, entry_id FROM inodes WHERE ino = ?", Int64(bitPattern: inode)) {
                EntryRef(kindCode: $0.string(0), idText: $0.string(1))
            } ?? nil
        }
    }
}
