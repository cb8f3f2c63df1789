import Foundation
import NotesModel
import SQLiteKit

// The one place where ids, kinds and operations meet their SQL text. The
// columns stay TEXT (lowercase UUIDs, `note`/`folder`, `put`/`delete`);
// above this file the store passes `EntityRef`, `NoteID`, `FolderID`,
// `ChangeID` and `ChangeOperation`, never their text.

extension EntityKind: SQLBindable {
    public var sqlValue: SQLValue { .text(rawValue) }
}

extension ChangeOperation: SQLBindable {
    /// The outbox's `op` column: `put` or `delete` (its CHECK constraint).
    public var sqlValue: SQLValue { .text(rawValue) }
}

extension NoteID: SQLBindable {
    public var sqlValue: SQLValue { .text(description) }
}

extension FolderID: SQLBindable {
    public var sqlValue: SQLValue { .text(description) }
}

extension ChangeID: SQLBindable {
    public var sqlValue: SQLValue { .text(description) }
}

extension DeviceID: SQLBindable {
    public var sqlValue: SQLValue { .text(description) }
}

extension Row {
    /// The entity named by a kind column and an id column. A value notesfs
    /// never writes there (the file was damaged or edited by hand) is a typed
    /// error naming the table, not a guess.
    func entityRef(kind kindColumn: Int, id idColumn: Int, in table: String) throws(StoreError) -> EntityRef {
        let kindText = string(kindColumn)
        guard let kind = EntityKind(rawValue: kindText) else {
            throw .damaged("\(table) names the entity kind '\(kindText.prefix(64))'")
        }
        return EntityRef(kind: kind, id: try uuid(idColumn, in: table))
    }

    /// A UUID column of `table`; see `entityRef`.
    func uuid(_ column: Int, in table: String) throws(StoreError) -> UUID {
        guard let uuid = withBytes(column, { UUIDText.parse(bytes: $0) }) ?? UUIDText.parse(string(column)) else {
            throw .damaged("\(table) holds '\(string(column).prefix(64))' where an id belongs")
        }
        return uuid
    }

    /// A UUID column of `table` that may be NULL; see `entityRef`.
    func optionalUUID(_ column: Int, in table: String) throws(StoreError) -> UUID? {
        isNull(column) ? nil : try uuid(column, in: table)
    }

    /// A change id column; see `entityRef`.
    func changeID(_ column: Int, in table: String) throws(StoreError) -> ChangeID {
        ChangeID(try uuid(column, in: table))
    }

    /// The outbox's `op` column; see `entityRef`.
    func changeOperation(_ column: Int) throws(StoreError) -> ChangeOperation {
        let text = string(column)
        guard let operation = ChangeOperation(rawValue: text) else {
            throw .damaged("outbox holds the operation '\(text.prefix(64))'")
        }
        return operation
    }
}
