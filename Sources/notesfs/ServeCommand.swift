import Foundation
import HTTPServer
import SyncProtocol
import SyncServer
import SyncServerPostgres
import SyncServerSQLite

/// `notesfs serve`: the sync server (DESIGN.md "The sync protocol").
struct ServeCommand: Command {
    static let name = "serve"
    static let summary = "Run the sync server that carries changes between your machines"
    static let help = """
        Usage: notesfs serve [--listen 127.0.0.1:8080] [--data DIR | --postgres CONNINFO [--counter-mark FILE]]
                             [--retention-days N] [--history-days N] [--history-max-mb N]
                             [--tls-cert FILE --tls-key FILE] [limits...]

        Serves the sync protocol over HTTP/1.1 (HTTPS with --tls-cert/--tls-key).
        Accounts and tokens are made with 'notesfs account add'. Logs one line per
        request to standard error (never note text). SIGTERM or SIGINT stops it:
        new connections are refused, parked long polls are answered, requests in
        flight finish, then it exits 0.

        A restored database is noticed at start: a small file beside the database
        (server.sqlite.counter-mark) remembers how far its counters got, and a
        database behind it gets a new epoch by itself, as 'notesfs server new-epoch'
        would give it. Back up the database, not the mark.

        Options:
          --listen ADDR          IP address and port (default 127.0.0.1:8080; port 0 picks one)
          --data DIR             Server data directory (default: $XDG_DATA_HOME/notesfs/server,
                                 or ~/.local/share/notesfs/server)
          --postgres CONNINFO    Keep the data in PostgreSQL instead (libpq connection string,
                                 e.g. 'host=db dbname=notesfs'); several serve processes may
                                 share it behind a load balancer. Migrates the schema at start.
          --counter-mark FILE    With --postgres: the file that remembers how far the counters
                                 got, so a restored database is noticed (kept on this machine,
                                 outside the database's backups). Without it, run
                                 'notesfs server new-epoch' after every restore.
          --pool-size N          PostgreSQL connections per process (default 8)
          --group-writers N      PostgreSQL group-commit writers per process, each with a
                                 connection of its own (default 2; 1 packs bigger groups,
                                 better when several processes share few cores)
          --retention-days N     Keep tombstones and answered change ids N days (default 90);
                                 a client offline longer resyncs through the index
          --history-days N       Keep every replaced version of every note and folder, deleted
                                 ones too, N days (default 30): clients can list a note's
                                 versions and read the tree as it was at any time since
          --history-max-mb N     Keep at most N MiB of replaced text per account (default:
                                 four times the account's live text, at least 64 MiB); the
                                 oldest versions go first, never a deleted note's last text
          --tls-cert FILE        PEM certificate chain, for HTTPS
          --tls-key FILE         PEM private key, for HTTPS
          --threads N            HTTP worker threads (default 2)
          --max-connections N    Open connections at most (default 4000)
          --max-connections-per-address N
                                 Open connections from one client address at most (default 64)
          --new-connections-per-address N
                                 New connections from one client address a second at most
                                 (default 200; 0: no limit); more are closed at accept
          --connection-timeout S Close a connection idle S seconds (default 60)
          --header-timeout S     A request's head must arrive whole within S seconds of
                                 connecting or of the previous answer (default 15)
          --body-timeout S       A request's body must arrive whole within S seconds (default 300)
          --note-max-bytes N     Largest note body (default 16777216); larger ones are refused
          --push-max-changes N   Changes per push (default 100)
          --push-max-bytes N     Payload bytes per push of several changes (default 4194304)
        """
    static let spec = ArgumentSpec(options: [
        "--listen", "--data", "--postgres", "--counter-mark", "--pool-size", "--group-writers", "--retention-days", "--history-days", "--history-max-mb", "--tls-cert", "--tls-key", "--threads", "--max-connections",
        "--max-connections-per-address", "--new-connections-per-address", "--header-timeout", "--body-timeout", "--connection-timeout", "--note-max-bytes", "--push-max-changes", "--push-max-bytes",
    ])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        // SIGTERM and SIGINT stay blocked in every thread started from here
        // on, and one thread takes them with sigwait once serving: a stop
        // sent at any moment (systemd's, right after READY=1) waits for it
        // and is never lost, as it could be while a dispatch signal source
        // was still being armed.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        for signalNumber in [SIGTERM, SIGINT] { sigaddset(&stopSignals, signalNumber) }
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        let listenText = arguments.option("--listen") ?? "127.0.0.1:8080"
        guard let address = ListenAddress(listenText) else {
            throw CommandError.usage("--listen needs an IP address and port like 127.0.0.1:8080, not '\(listenText)'")
        }
        let retentionDays = try arguments.integer("--retention-days", default: 90)
        guard retentionDays >= 1 else { throw CommandError.usage("--retention-days must be at least 1") }
        let historyDays = try positive(arguments, "--history-days", 30)
        let historyBudget = HistoryBudget(
            accountBytesMax: try arguments.option("--history-max-mb").map { _ in
                Int64(try positive(arguments, "--history-max-mb", 1)) << 20
            })
        let defaults = ProtocolLimits()
        let limits = ProtocolLimits(
            pushChangesMax: try positive(arguments, "--push-max-changes", defaults.pushChangesMax),
            pushPayloadBytesMax: try positive(arguments, "--push-max-bytes", defaults.pushPayloadBytesMax),
            noteBytesMax: try positive(arguments, "--note-max-bytes", defaults.noteBytesMax))
        var tls: (certificatePEM: String, keyPEM: String)?
        switch (arguments.option("--tls-cert"), arguments.option("--tls-key")) {
        case (nil, nil):
            break
        case (let cert?, let key?):
            do {
                tls = (try String(contentsOfFile: cert, encoding: .utf8), try String(contentsOfFile: key, encoding: .utf8))
            } catch {
                throw CommandError.failed("cannot read the TLS files: \(error.localizedDescription)")
            }
        default:
            throw CommandError.usage("--tls-cert and --tls-key go together")
        }

        let logger = StandardErrorLogger()
        let store = try ServerData.openStore(
            arguments, creating: true, poolSize: try positive(arguments, "--pool-size", 8),
            groupWriters: try positive(arguments, "--group-writers", 2))
        let keeper = try checkCounterMark(arguments, store: store, logger: logger)
        let server = SyncServer(
            store: store,
            configuration: SyncServer.Configuration(
                limits: limits, tombstoneRetentionSeconds: Double(retentionDays) * 86_400,
                historyRetentionSeconds: Double(historyDays) * 86_400, historyBudget: historyBudget),
            logger: logger)
        // Commits made elsewhere (other serve processes, other connections to
        // the file) wake this process's long polls, and every account's head
        // is kept in memory, so an idle long poll reads nothing.
        if let reporter = store as? any CommitReporting { server.followCommits(of: reporter) }
        if let shared = store as? PostgresServerStore {
            // A token revoked anywhere ends that account's parked polls with 401 at once.
            shared.onTokensChanged { account in server.tokensChanged(account: account) }
        }
        // With SQLite, `notesfs account revoke` runs in another process: watch for it.
        let revocations = Task { await server.watchRevocations() }
        let dataText = arguments.option("--postgres") != nil ? "PostgreSQL" : ServerData.directory(arguments)
        let configuration = HTTPServer.Configuration(
            address: address, threadPoolSize: try positive(arguments, "--threads", 2),
            connectionLimit: try positive(arguments, "--max-connections", 4_000),
            connectionsPerAddressMax: try positive(arguments, "--max-connections-per-address", 64),
            newConnectionsPerAddressPerSecond: try notNegative(arguments, "--new-connections-per-address", 200),
            requestHeadTimeoutSeconds: try positive(arguments, "--header-timeout", 15),
            requestBodyTimeoutSeconds: try positive(arguments, "--body-timeout", 300),
            connectionTimeoutSeconds: try positive(arguments, "--connection-timeout", 60),
            requestBodyBytesMax: limits.requestBodyBytesMax, tls: tls)
        let http: HTTPServer
        do {
            http = try HTTPServer(server: server, configuration: configuration, logger: logger)
        } catch {
            revocations.cancel()
            Task { await store.close() }
            throw CommandError.failed(error.description)
        }
        let scheme = tls == nil ? "http" : "https"
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        let systemd = SystemdNotifier.fromEnvironment()
        logger.log(
            "notesfs serve: listening on \(scheme)://\(host):\(http.port) (data \(dataText), "
                + "pid \(getpid()))")

        if retentionDays < historyDays {
            logger.log(
                "notesfs serve: tombstones are kept \(retentionDays) days, fewer than the history's \(historyDays): "
                    + "a deleted note's history goes with its tombstone")
        }

        // Retention, then history trimming (in short steps, so pushes never
        // wait long), at start and every hour.
        let maintenance = Task {
            while !Task.isCancelled {
                do {
                    let report = try await server.purgeExpired()
                    if report.tombstones + report.changeIds > 0 {
                        logger.log("retention: removed \(report.tombstones) tombstones, \(report.changeIds) change ids")
                    }
                } catch {
                    logger.log("retention failed: \(error)")
                }
                do {
                    let report = try await server.trimHistory()
                    if report.versions > 0 {
                        logger.log("history: removed \(report.versions) versions (\(report.bytes) bytes)")
                    }
                } catch {
                    logger.log("history trimming failed: \(error)")
                }
                try? await Task.sleep(for: .seconds(3_600))
            }
        }

        // The mark follows the counters now and then, never on the push path.
        let marking = Task {
            var lastFailure: String?
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(counterMarkIntervalSeconds))
                guard let keeper else { return }
                do {
                    try await keeper.record()
                    lastFailure = nil
                } catch {
                    let text = String(describing: error)
                    if text != lastFailure { logger.log("counter mark: \(text)") }
                    lastFailure = text
                }
            }
        }

        let stopped = DispatchSemaphore(value: 0)
        let waitedSignals = stopSignals
        let signalThread = Thread {
            var waited = waitedSignals
            var received: Int32 = 0
            while sigwait(&waited, &received) != 0 {}
            stopped.signal()
        }
        signalThread.name = "notesfs-serve-signals"
        signalThread.start()
        systemd.send("READY=1")
        stopped.wait()
        systemd.send("STOPPING=1")
        logger.log("notesfs serve: stopping (finishing requests in flight)")
        http.stop(graceSeconds: 10)
        revocations.cancel()
        maintenance.cancel()
        marking.cancel()
        if let keeper {
            do {
                try ServerData.blockingAwait { try await keeper.record() }
            } catch {
                logger.log("counter mark: \(error)")
            }
        }
        try ServerData.blockingAwait { await store.close() }
        logger.log("notesfs serve: stopped")
        return 0
    }

    /// How often the counter mark is brought up to date while serving.
    static let counterMarkIntervalSeconds = 2

    /// Checks the store against its counter mark before serving, starting a
    /// new epoch when the store was put back from an older copy. Nil when
    /// there is no mark to keep (PostgreSQL without --counter-mark).
    private static func checkCounterMark(
        _ arguments: ParsedArguments, store: any ServerStore, logger: any ServerLogger
    ) throws -> CounterMarkKeeper? {
        let path: String
        if let given = arguments.option("--counter-mark") {
            path = given
        } else if arguments.option("--postgres") == nil {
            path = CounterMark.path(
                besideDatabase: SQLiteServerStore.databasePath(inDirectory: ServerData.directory(arguments)))
        } else {
            logger.log(
                "notesfs serve: no --counter-mark, so a database restored from a backup is not noticed by itself; "
                    + "run 'notesfs server new-epoch' after a restore")
            return nil
        }
        let keeper = CounterMarkKeeper(store: store, mark: CounterMark(path: path))
        do {
            if let message = try ServerData.blockingAwait({ try await keeper.startNewEpochIfRestored(now: Date()) }) {
                logger.log("notesfs serve: \(message)")
            }
        } catch let error as CounterMarkError {
            Task { await store.close() }
            throw CommandError.failed(
                "\(error); if the database is known to be current, remove that file (then run "
                    + "'notesfs server new-epoch' if it was restored from a backup)")
        } catch {
            Task { await store.close() }
            throw CommandError.failed("cannot check the counter mark: \(error)")
        }
        return keeper
    }

    private static func notNegative(_ arguments: ParsedArguments, _ name: String, _ fallback: Int) throws -> Int {
        let value = try arguments.integer(name, default: fallback)
        guard value >= 0 else { throw CommandError.usage("\(name) must be 0 or more") }
        return value
    }

    private static func positive(_ arguments: ParsedArguments, _ name: String, _ fallback: Int) throws -> Int {
        let value = try arguments.integer(name, default: fallback)
        guard value >= 1 else { throw CommandError.usage("\(name) must be at least 1") }
        return value
    }
}
