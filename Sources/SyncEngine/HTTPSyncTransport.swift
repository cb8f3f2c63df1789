import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import SyncProtocol
import Synchronization

/// The sync protocol over HTTP(S) with `URLSession` (libcurl underneath on
/// Linux): one session, so connections are kept alive and reused; gzip
/// replies are accepted and decoded by the session; every request carries
/// the bearer token.
///
/// Failures are told apart for the engine: no answer at all is `offline`, a
/// 4xx is the server saying no, a 5xx or an unreadable answer is the server
/// breaking (see `TransportDecoding`).
public final class HTTPSyncTransport: SyncTransport {
    /// Seconds a request without a long-poll wait may take.
    public static let requestTimeoutSeconds: Double = 30
    /// A long poll's timeout exceeds its wait by this much (DESIGN.md).
    public static let waitMarginSeconds: Double = 15
    /// Longest wait a long poll may ask for.
    public static let waitSecondsMax = 60

    /// Requests and bytes seen on the wire (bytes are approximate for headers).
    public struct Counters: Sendable, Equatable, Codable {
        public var requests = 0
        public var bytesSent = 0
        public var bytesReceived = 0
        public init() {}
    }

    public let baseURL: URL
    private let authorization: String
    private let session: URLSession
    private let counters = Mutex(Counters())

    /// `baseURL` is the server's root (`http://host:8080`); `token` is the
    /// text after `Bearer ` and is never logged.
    public init(baseURL: URL, token: String) {
        self.baseURL = baseURL
        self.authorization = "Bearer \(token)"
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.requestTimeoutSeconds
        configuration.timeoutIntervalForResource = Double(Self.waitSecondsMax) + Self.waitMarginSeconds + 60
        configuration.httpMaximumConnectionsPerHost = 4
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpAdditionalHeaders = ["Accept-Encoding": "gzip", "User-Agent": "notesfs"]
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Ends every request in flight (they fail as `offline`).
    public func cancelAll() {
        session.getAllTasks { tasks in tasks.forEach { $0.cancel() } }
    }

    /// What went over the wire so far.
    public var wireCounters: Counters { counters.withLock { $0 } }

    public func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        let body = try TransportDecoding.encode(request)
        let (status, data) = try await send(method: "POST", path: Endpoint.push, body: body)
        return try TransportDecoding.decode(PushResponse.self, status: status, body: data)
    }

    public func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        let wait = min(max(0, waitSeconds), Self.waitSecondsMax)
        var query = [
            URLQueryItem(name: Endpoint.Query.limit, value: String(limit)),
            URLQueryItem(name: Endpoint.Query.wait, value: String(wait)),
        ]
        if let since { query.append(URLQueryItem(name: Endpoint.Query.since, value: since.rawValue)) }
        let (status, data) = try await send(
            method: "GET", path: Endpoint.changes, query: query,
            timeoutSeconds: max(Self.requestTimeoutSeconds, Double(wait) + Self.waitMarginSeconds))
        return try TransportDecoding.decode(ChangesPage.self, status: status, body: data)
    }

    public func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        var query = [URLQueryItem(name: Endpoint.Query.limit, value: String(limit))]
        if let after { query.append(URLQueryItem(name: Endpoint.Query.after, value: after)) }
        let (status, data) = try await send(method: "GET", path: Endpoint.index, query: query)
        return try TransportDecoding.decode(IndexPage.self, status: status, body: data)
    }

    public func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        let body = try TransportDecoding.encode(request)
        let (status, data) = try await send(method: "POST", path: Endpoint.fetch, body: body)
        return try TransportDecoding.decode(FetchResponse.self, status: status, body: data)
    }

    /// `GET /healthz` (no token): true when the server answers ok.
    public func healthy() async -> Bool {
        guard let (status, _) = try? await send(method: "GET", path: Endpoint.healthz, authorized: false) else {
            return false
        }
        return status == 200
    }

    // MARK: Sending

    private func url(_ path: String, query: [URLQueryItem]) throws(TransportError) -> URL {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw .rejected(status: 0, code: "bad_url", message: "\(baseURL) is not a usable server URL")
        }
        let prefix = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = prefix + path
        if !query.isEmpty {
            components.queryItems = query
            // `+` would read as a space on the server.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        }
        guard let url = components.url else {
            throw .rejected(status: 0, code: "bad_url", message: "cannot build a request URL from \(baseURL)")
        }
        return url
    }

    private func send(
        method: String, path: String, query: [URLQueryItem] = [], body: Data? = nil,
        timeoutSeconds: Double = requestTimeoutSeconds, authorized: Bool = true
    ) async throws(TransportError) -> (Int, Data) {
        var request = URLRequest(url: try url(path, query: query))
        request.httpMethod = method
        request.timeoutInterval = timeoutSeconds
        if authorized { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        if body != nil {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            // libcurl otherwise sends `Expect: 100-continue` for bodies over 1 KB
            // and waits for an interim answer before uploading: ~190 ms per push.
            request.setValue("", forHTTPHeaderField: "Expect")
        }
        let data: Data
        let response: URLResponse
        do {
            if let body {
                (data, response) = try await session.upload(for: request, from: body)
            } else {
                (data, response) = try await session.data(for: request)
            }
        } catch let error as URLError {
            count(sent: body?.count ?? 0, received: 0, headerBytes: 0)
            throw Self.map(error)
        } catch is CancellationError {
            throw .offline("cancelled")
        } catch {
            throw .offline(String(describing: error))
        }
        guard let http = response as? HTTPURLResponse else {
            throw .serverBroke("the answer was not HTTP")
        }
        // The session decodes gzip; Content-Length is what crossed the wire.
        let wireBody = (http.value(forHTTPHeaderField: "Content-Length")).flatMap(Int.init) ?? data.count
        let headerBytes = 200 + authorization.utf8.count + path.utf8.count
            + http.allHeaderFields.reduce(0) { total, field in
                total + "\(field.key)".utf8.count + "\(field.value)".utf8.count + 4
            }
        count(sent: body?.count ?? 0, received: wireBody, headerBytes: headerBytes)
        return (http.statusCode, data)
    }

    private func count(sent: Int, received: Int, headerBytes: Int) {
        counters.withLock {
            $0.requests += 1
            $0.bytesSent += sent + headerBytes / 2
            $0.bytesReceived += received + headerBytes / 2
        }
    }

    /// Every failure to get an answer means "no network" to the engine, except
    /// a server that answered something that is not HTTP.
    static func map(_ error: URLError) -> TransportError {
        switch error.code {
        case .badServerResponse, .cannotDecodeContentData, .cannotDecodeRawData, .cannotParseResponse,
            .zeroByteResource:
            return .serverBroke("unreadable answer (\(error.localizedDescription))")
        case .unsupportedURL, .badURL:
            return .rejected(status: 0, code: "bad_url", message: error.localizedDescription)
        case .timedOut:
            return .offline("timed out")
        case .cannotConnectToHost:
            return .offline("connection refused")
        case .cannotFindHost, .dnsLookupFailed:
            return .offline("cannot find the server's host")
        case .notConnectedToInternet:
            return .offline("no network")
        case .networkConnectionLost:
            return .offline("connection lost")
        case .cancelled:
            return .offline("cancelled")
        default:
            return .offline(error.localizedDescription)
        }
    }
}
