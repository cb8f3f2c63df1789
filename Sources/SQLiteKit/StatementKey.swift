/// A statement cache key that hashes the SQL's length and a few words from
/// its ends, not all of it: texts of up to 1.5 KB (the mount's entry queries)
/// were hashed in full on every run. Equality still compares the whole text,
/// so texts that share their ends only share a bucket.
struct StatementKey: Hashable {
    let sql: String

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.sql == rhs.sql }

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let sampled: Bool? = utf8.withContiguousStorageIfAvailable { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            guard raw.count >= 32 else {
                hasher.combine(bytes: raw)
                return true
            }
            hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count - 16, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
            return true
        }
        if sampled == nil { hasher.combine(sql) }
    }
}
