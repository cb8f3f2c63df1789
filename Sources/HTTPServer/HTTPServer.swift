import CMicroHTTPD
import Foundation
import Synchronization
import SyncServer

/// The sync server on HTTP/1.1 through libmicrohttpd: a small pool of
/// poll(2) threads; each request's body is collected, its connection is
/// suspended while `SyncServer.handle` runs (so a long poll holds no thread),
/// then resumed to send the answer.
public final class HTTPServer: Sendable {
    /// How the daemon runs.
    public struct Configuration: Sendable {
        public var address: ListenAddress
        /// libmicrohttpd worker threads (each runs its own poll(2) loop).
        public var threadPoolSize: Int
        /// Open connections at most; more are refused at accept.
        public var connectionLimit: Int
        /// Open connections from one client address at most (0: no limit);
        /// more are refused at accept, so one address cannot take them all.
        public var connectionsPerAddressMax: Int
        /// New connections from one client address a second at most (0: no
        /// limit); more are closed at accept, unread and unanswered.
        public var newConnectionsPerAddressPerSecond: Int
        /// A request's head must arrive whole within this many seconds of
        /// the connection opening or of the previous answer, however slowly
        /// its bytes trickle in (kept-alive connections idle no longer).
        public var requestHeadTimeoutSeconds: Int
        /// A request's body must arrive whole within this many seconds of its
        /// head (after the token check).
        public var requestBodyTimeoutSeconds: Int
        /// More query parameters than this get 400.
        public var queryParametersMax: Int
        /// A connection idle this long (no bytes either way) is closed;
        /// parked long polls do not count as idle.
        public var connectionTimeoutSeconds: Int
        /// Bytes per connection for headers and buffers; larger headers get 431.
        /// libmicrohttpd clears all of it after every request, so it is kept
        /// small: 16 KiB holds any head a client sends (about 300 bytes) many
        /// times over, and bodies stream through it in pieces.
        public var connectionMemoryBytes: Int
        /// Request bodies larger than this get 413 (or a closed connection
        /// when they come without a Content-Length).
        public var requestBodyBytesMax: Int
        /// Responses larger than this are gzip-compressed when accepted and it
        /// makes them smaller by more than the header costs (a push reply of
        /// one change: 205 → 158 bytes; a poll's one-note page by a third).
        public var gzipMinimumBytes: Int
        /// PEM text of the certificate chain and key, for HTTPS.
        public var tls: (certificatePEM: String, keyPEM: String)?

        public init(
            address: ListenAddress, threadPoolSize: Int = 2, connectionLimit: Int = 4_000,
            connectionsPerAddressMax: Int = 64, newConnectionsPerAddressPerSecond: Int = 200,
            requestHeadTimeoutSeconds: Int = 15,
            requestBodyTimeoutSeconds: Int = 300, queryParametersMax: Int = 32,
            connectionTimeoutSeconds: Int = 60, connectionMemoryBytes: Int = 16 * 1_024,
            requestBodyBytesMax: Int, gzipMinimumBytes: Int = 128, tls: (certificatePEM: String, keyPEM: String)? = nil
        ) {
            self.address = address
            self.threadPoolSize = threadPoolSize
            self.connectionLimit = connectionLimit
            self.connectionsPerAddressMax = connectionsPerAddressMax
            self.newConnectionsPerAddressPerSecond = newConnectionsPerAddressPerSecond
            self.requestHeadTimeoutSeconds = requestHeadTimeoutSeconds
            self.requestBodyTimeoutSeconds = requestBodyTimeoutSeconds
            self.queryParametersMax = queryParametersMax
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.connectionMemoryBytes = connectionMemoryBytes
            self.requestBodyBytesMax = requestBodyBytesMax
            self.gzipMinimumBytes = gzipMinimumBytes
            self.tls = tls
        }
    }

    /// The port actually bound (useful with port 0).
    public let port: UInt16
    private let daemon: Daemon
    private let context: DaemonContext

    /// Starts listening at once.
    public init(server: SyncServer, configuration: Configuration, logger: any ServerLogger) throws(HTTPServerError) {
        let rate = configuration.newConnectionsPerAddressPerSecond
        context = try DaemonContext(
            server: server, logger: logger, requestBodyBytesMax: configuration.requestBodyBytesMax,
            gzipMinimumBytes: configuration.gzipMinimumBytes, queryParametersMax: configuration.queryParametersMax,
            deadlines: ConnectionDeadlines(
                headSeconds: max(1, configuration.requestHeadTimeoutSeconds),
                bodySeconds: max(1, configuration.requestBodyTimeoutSeconds)),
            admission: rate > 0 ? ConnectionAdmission(perSecond: rate) : nil)
        daemon = try Daemon(configuration: configuration, context: context)
        port = daemon.port
    }

    /// Requests begun and not yet finished.
    public var openRequests: Int { context.openRequests }

    /// Connections cut off for missing a head or body deadline so far.
    public var connectionsCutOff: Int { context.deadlines.cutOffCount }

    deinit {
        // The daemon's callbacks use `context` unretained: stop it first.
        stop(graceSeconds: 0)
        daemon.stop()
    }

    /// Stops accepting connections, answers parked long polls, lets requests
    /// in flight finish (up to `graceSeconds`), then stops the daemon.
    ///
    /// Requests that arrive on open connections meanwhile get `503`. A
    /// handler already running is always waited for, past the grace period
    /// if need be: libmicrohttpd cannot stop with a connection suspended.
    public func stop(graceSeconds: Double = 10) {
        guard daemon.quiesce() else { return }
        context.beginStopping()
        context.server.beginShutdown()
        let deadline = Date().addingTimeInterval(graceSeconds)
        while context.openRequests > 0 && Date() < deadline {
            usleep(5_000)
        }
        // A handler finishing the reply it just sent is the common case and
        // worth no line; one still running after a second is.
        var nextReport = Date().addingTimeInterval(1)
        while context.handlersRunning > 0 {
            if Date() >= nextReport {
                context.logger.log("stopping: waiting for \(context.handlersRunning) request handler(s) to finish")
                nextReport = Date().addingTimeInterval(5)
            }
            usleep(5_000)
        }
        daemon.stop()
        context.deadlines.stop()
        context.refusals.stop()
    }
}

/// Owns the `MHD_Daemon` handle and the C strings it was given.
///
/// `@unchecked Sendable`: the handle is used only under `state`'s lock
/// (quiesce and stop), and libmicrohttpd's own threads use it internally.
private final class Daemon: @unchecked Sendable {
    private struct State {
        var quiesced = false
        var stopped = false
        var listenSocket: Int32 = -1
    }

    let port: UInt16
    private let handle: OpaquePointer
    private let state = Mutex(State())
    private let tlsStrings: [UnsafeMutablePointer<CChar>]
    /// Where libmicrohttpd's messages go; it keeps the pointer until stopped.
    private let messageSink: UnsafeMutablePointer<cmhd_message_sink>

    init(configuration: HTTPServer.Configuration, context: DaemonContext) throws(HTTPServerError) {
        guard var address = configuration.address.socketAddressBytes else {
            throw .badAddress(configuration.address.description)
        }
        // poll(2), not epoll: libmicrohttpd 0.9.75's MHD_quiesce_daemon races
        // its own epoll workers over removing the listen socket and aborts the
        // process ("Failed to remove listen FD from epoll set") when a worker
        // wins. With poll the workers read the quiesce flag instead.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_POLL.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        if configuration.address.host.contains(":") { flags |= MHD_USE_IPv6.rawValue }
        var tlsStrings: [UnsafeMutablePointer<CChar>] = []
        if let tls = configuration.tls {
            guard MHD_is_feature_supported(.FEATURE_TLS) == .YES else { throw .tlsUnsupported }
            flags |= MHD_USE_TLS.rawValue
            guard let key = strdup(tls.keyPEM), let cert = strdup(tls.certificatePEM) else {
                throw .cannotStart("out of memory")
            }
            tlsStrings = [key, cert]
        }
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let messageSink = UnsafeMutablePointer<cmhd_message_sink>.allocate(capacity: 1)
        messageSink.initialize(to: cmhd_message_sink(log: mhdMessage, context: contextPointer))
        let started: OpaquePointer? = address.withUnsafeMutableBytes { bytes in
            var config = cmhd_daemon_config()
            config.flags = flags
            config.address = UnsafePointer(bytes.baseAddress?.assumingMemoryBound(to: sockaddr.self))
            config.thread_pool_size = UInt32(max(1, configuration.threadPoolSize))
            config.connection_limit = UInt32(max(1, configuration.connectionLimit))
            config.connection_timeout_seconds = UInt32(max(0, configuration.connectionTimeoutSeconds))
            config.connection_memory_limit = max(8_192, configuration.connectionMemoryBytes)
            config.tls_key_pem = tlsStrings.first.map { UnsafePointer($0) }
            config.tls_cert_pem = tlsStrings.last.map { UnsafePointer($0) }
            config.handler = mhdAccessHandler
            config.handler_context = Unmanaged.passUnretained(context).toOpaque()
            config.completed = mhdRequestCompleted
            config.completed_context = contextPointer
            config.per_address_connection_limit = UInt32(max(0, configuration.connectionsPerAddressMax))
            config.accept_policy = mhdAcceptPolicy
            config.accept_policy_context = contextPointer
            config.uri_logger = mhdRequestLine
            config.uri_logger_context = contextPointer
            config.connection_notify = mhdConnectionNotify
            config.connection_notify_context = contextPointer
            config.message_sink = UnsafePointer(messageSink)
            return withUnsafePointer(to: &config) { cmhd_start_daemon($0) }
        }
        guard let started else {
            tlsStrings.forEach { free($0) }
            messageSink.deallocate()
            throw .cannotStart(
                "libmicrohttpd did not start on \(configuration.address) (address in use, or bad TLS files?)")
        }
        handle = started
        port = cmhd_bound_port(started)
        self.tlsStrings = tlsStrings
        self.messageSink = messageSink
    }

    /// Stops accepting; false when already done.
    func quiesce() -> Bool {
        state.withLock { state in
            guard !state.quiesced else { return false }
            state.quiesced = true
            state.listenSocket = MHD_quiesce_daemon(handle)
            return true
        }
    }

    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            MHD_stop_daemon(handle)
            if state.listenSocket >= 0 { close(state.listenSocket) }
        }
    }

    deinit {
        stop()
        tlsStrings.forEach { free($0) }
        messageSink.deallocate()
    }
}
