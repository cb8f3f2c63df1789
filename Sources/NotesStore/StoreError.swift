import SQLiteKit

/// Why a store operation did not happen. Nothing is half-written when one is thrown.
public enum StoreError: Error, Equatable, CustomStringConvertible, Sendable {
    /// No live entry with that name or id.
    case notFound(String)
    /// The name is taken in that directory.
    case alreadyExists(String)
    /// A directory that still has entries.
    case notEmpty(String)
    /// A directory was expected.
    case notADirectory(String)
    /// A file was expected.
    case isADirectory(String)
    /// The note would exceed the size limit (bytes).
    case tooLarge(limit: Int)
    /// The name cannot be used (empty, `/`, NUL, `.`/`..`, too long, reserved).
    case invalidName(String)
    /// A directory rename across the synced / local-only line; callers copy instead.
    case crossesLocalOnlyLine(String)
    /// Moving a folder inside itself.
    case wouldCreateCycle(String)
    /// The operation is not allowed on this entry (hard links, symlinks to synced names, ...).
    case notPermitted(String)
    /// Free disk space is below the reserve; nothing was written.
    case diskFull
    /// The database file was written by a newer notesfs.
    case newerSchema(found: Int, supported: Int)
    /// This store and the server's account do not go together (another
    /// account's token); the text says why and what to do.
    case syncMismatch(String)
    /// A row holds a value notesfs never writes there (an id that is not a
    /// UUID, an unknown kind): the database file was damaged or edited by hand.
    case damaged(String)
    /// Another connection held the database locked past the wait (another
    /// process writing it); trying again may succeed.
    case busy(SQLiteError)
    /// SQLite failed.
    case database(SQLiteError)
    /// A local-only file's backing file could not be read or written.
    case localFile(LocalFileError)

    public var description: String {
        switch self {
        case .notFound(let what): "\(what) does not exist"
        case .alreadyExists(let name): "'\(name)' already exists"
        case .notEmpty(let name): "'\(name)' is not empty"
        case .notADirectory(let name): "'\(name)' is not a directory"
        case .isADirectory(let name): "'\(name)' is a directory"
        case .tooLarge(let limit): "a note can hold at most \(limit) bytes"
        case .invalidName(let reason): "invalid name: \(reason)"
        case .crossesLocalOnlyLine(let name):
            "'\(name)' would move a directory between synced and local-only names; copy it instead"
        case .wouldCreateCycle(let name): "cannot move '\(name)' inside itself"
        case .notPermitted(let reason): reason
        case .diskFull: "the disk is almost full; free some space and try again (nothing was written)"
        case .newerSchema(let found, let supported):
            "this notes database was written by a newer notesfs (schema \(found); this one knows up to "
                + "\(supported)). Upgrade notesfs; the database was left untouched."
        case .syncMismatch(let reason): reason
        case .damaged(let what): "the notes database is damaged: \(what)"
        case .busy(let error): error.description
        case .database(let error): error.description
        case .localFile(let error): error.description
        }
    }
}

extension StoreError {
    /// Runs `body`, turning SQLite errors into `StoreError.database`.
    static func wrap<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch let error as LocalFileError {
            if error.isDiskFull { throw .diskFull }
            throw .localFile(error)
        } catch let error as SQLiteError {
            if error.isDiskFull { throw .diskFull }
            if error.isBusy { throw .busy(error) }
            throw .database(error)
        } catch {
            throw .database(SQLiteError(code: 1, message: String(describing: error)))
        }
    }
}
