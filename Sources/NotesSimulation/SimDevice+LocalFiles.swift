import Foundation
import NotesStore
import SQLiteKit

extension SimDevice {
    /// Tokens in this device's local-only regular files (`(not synced)`
    /// copies, editor backups), whose bytes live in their rows or in the
    /// store's backing files: read through the store.
    func localFileTokens() throws -> Set<Int> {
        let entries = try reader.query("SELECT seq FROM local_entries WHERE type = 2") { $0.int64(0) }
        var tokens = Set<Int>()
        for seq in entries {
            // A file removed since the query read nothing to keep.
            guard let bytes = try? store.admin.contents(of: .local(seq)) else { continue }
            tokens.formUnion(SimText.tokens(bytes))
        }
        return tokens
    }
}
