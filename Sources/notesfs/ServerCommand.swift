import Foundation
import PostgresKit
import Synchronization
import SyncServer
import SyncServerPostgres
import SyncServerSQLite

/// `notesfs server new-epoch`: after restoring the server's data from a
/// backup, give it a new epoch so every client resyncs instead of trusting
/// cursors that may point past the restored data.
struct ServerCommand: Command {
    static let name = "server"
    static let summary = "Server maintenance: new-epoch after restoring server data from a backup"
    static let help = """
        Usage: notesfs server new-epoch [--data DIR | --postgres CONNINFO]
               notesfs server migrate --postgres CONNINFO

        new-epoch   Gives the server database a new epoch. Every client's cursor then
                    answers 410 Gone and the client resyncs through the index, so
                    nothing a client has that the restored backup lacks is lost.
                    Run it with the server stopped, right after restoring a backup.
        migrate     Brings a PostgreSQL database's schema up to date and exits
                    ('notesfs serve --postgres' also does this at start; several
                    processes starting at once migrate exactly once).

        Options:
          --data DIR           Server data directory (default: $XDG_DATA_HOME/notesfs/server,
                               or ~/.local/share/notesfs/server).
          --postgres CONNINFO  Use a PostgreSQL database instead, e.g.
                               'host=db.internal dbname=notesfs user=notesfs'.
        """
    static let spec = ArgumentSpec(options: ["--data", "--postgres"], positional: 1...1, actions: ["new-epoch", "migrate"])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        if arguments.positional[0] == "migrate" {
            guard arguments.option("--postgres") != nil else {
                throw CommandError.usage("server migrate needs --postgres CONNINFO (SQLite migrates on open)")
            }
            let store = try ServerData.openStore(arguments, creating: true)
            try ServerData.blockingAwait { await store.close() }
            console.out("The PostgreSQL schema is up to date.")
            return 0
        }
        guard arguments.positional[0] == "new-epoch" else {
            throw CommandError.usage("unknown action '\(arguments.positional[0])'; use new-epoch or migrate")
        }
        let store = try ServerData.openStore(arguments, creating: false)
        let epoch = try ServerData.blockingAwait {
            defer { Task { await store.close() } }
            return try await store.newEpoch(now: Date())
        }
        console.out("New epoch \(epoch). Clients will resync on their next pull.")
        return 0
    }
}

/// Where the server keeps its data, and how commands reach it.
enum ServerData {
    /// `--data`, else `$XDG_DATA_HOME/notesfs/server`, else `~/.local/share/notesfs/server`.
    static func directory(_ arguments: ParsedArguments) -> String {
        if let data = arguments.option("--data") { return data }
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("notesfs/server").path
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/notesfs/server").path
    }

    /// Opens the PostgreSQL store of `--postgres` (migrating its schema), or
    /// else the SQLite store in the data directory, making the directory
    /// (mode 0700) when `creating`.
    static func openStore(
        _ arguments: ParsedArguments, creating: Bool, poolSize: Int = 8, groupWriters: Int = 2
    ) throws -> any ServerStore {
        if let conninfo = arguments.option("--postgres") {
            guard arguments.option("--data") == nil else {
                throw CommandError.usage("use either --data or --postgres, not both")
            }
            do {
                return try PostgresServerStore(
                    conninfo: conninfo,
                    options: PostgresServerStore.Options(
                        pool: PostgresPool.Options(connectionsMax: poolSize), groupWriters: groupWriters))
            } catch {
                throw CommandError.failed("cannot open the PostgreSQL store: \(error)")
            }
        }
        let directory = directory(arguments)
        if !FileManager.default.fileExists(atPath: directory), !creating {
            throw CommandError.failed("there is no server data in \(directory); start 'notesfs serve' or add an account first")
        }
        try DataLocation.makePrivateDirectory(directory)
        return try SQLiteServerStore(path: SQLiteServerStore.databasePath(inDirectory: directory))
    }

    /// Runs async work from a synchronous command and waits for it. The
    /// calling thread (the main thread) is not part of the cooperative pool.
    static func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else {
            throw CommandError.failed("internal error: async work ended without a result")
        }
        return try outcome.get()
    }
}
