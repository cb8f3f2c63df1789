import CCurl
import Foundation
import NotesModel
import SyncProtocol
import Synchronization

/// The sync protocol over HTTP(S) with libcurl (`CurlClient`): connections
/// are kept alive and reused, gzip replies are accepted and decoded, every
/// request carries the bearer token.
///
/// Failures are told apart for the engine and the status: no answer at all is
/// `offline`, a certificate or URL that cannot work says so, HTTP answers are
/// classified by `TransportDecoding`. None of them refuses a change.
public final class HTTPSyncTransport: SyncTransport {
    /// Seconds a request without a long-poll wait may take.
    public static let requestTimeoutSeconds: Double = 30
    /// A long poll's timeout exceeds its wait by this much (DESIGN.md).
    public static let waitMarginSeconds: Double = 15
    /// Longest wait a long poll may ask for.
    public static let waitSecondsMax = 60
    /// Request bodies larger than this travel gzip-compressed when it makes them smaller.
    static let compressBodiesOverBytes = 256

    /// Requests and bytes seen on the wire (bytes are approximate for headers).
    public struct Counters: Sendable, Equatable, Codable {
        public var requests = 0
        public var bytesSent = 0
        public var bytesReceived = 0
        public init() {}
    }

    public let baseURL: URL
    /// The URL as the user gave it, for messages ("the server at … answered 404").
    var serverName: String { baseURL.absoluteString }
    /// A PEM file of certificates to trust instead of the system's (`--ca-file`).
    public let caFile: String?
    /// Named in long polls, so the server does not wake them for this device's own pushes.
    public let device: DeviceID?
    /// Tells the server this device's name with the session's first push; nil: no name.
    public let deviceNameOffer: DeviceNameOffer?
    private let authorization: String
    private let client = CurlClient()
    private let counters = Mutex(Counters())

    /// `baseURL` is the server's root (`http://host:8080`); `token` is the
    /// text after `Bearer ` and is never logged; `device` is the pushing
    /// device's id and `deviceName` its name for other machines' logs;
    /// `caFile` replaces the system's trusted certificates.
    public init(
        baseURL: URL, token: String, device: DeviceID? = nil, deviceName: String? = nil, caFile: String? = nil
    ) {
        self.baseURL = baseURL
        self.caFile = caFile
        self.device = device
        self.deviceNameOffer = deviceName.flatMap(DeviceNameOffer.init(name:))
        self.authorization = "Bearer \(token)"
    }

    /// Ends every request in flight (they fail as `offline`).
    public func cancelAll() {
        client.cancelAll()
    }

    /// What went over the wire so far.
    public var wireCounters: Counters { counters.withLock { $0 } }

    public func push(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        guard let deviceNameOffer else { return try await send(request) }
        return try await deviceNameOffer.push(request) { request throws(TransportError) in try await send(request) }
    }

    private func send(_ request: PushRequest) async throws(TransportError) -> PushResponse {
        let body = try TransportDecoding.encode(request)
        let (status, data) = try await send(method: "POST", path: Endpoint.push, body: body)
        return try TransportDecoding.decode(PushResponse.self, status: status, body: data, server: serverName)
    }

    public func changes(since: SyncCursor?, limit: Int, waitSeconds: Int) async throws(TransportError) -> ChangesPage {
        let wait = min(max(0, waitSeconds), Self.waitSecondsMax)
        var query = [
            URLQueryItem(name: Endpoint.Query.limit, value: String(limit)),
            URLQueryItem(name: Endpoint.Query.wait, value: String(wait)),
        ]
        if let since { query.append(URLQueryItem(name: Endpoint.Query.since, value: since.rawValue)) }
        if wait > 0, let device { query.append(URLQueryItem(name: Endpoint.Query.device, value: device.description)) }
        let (status, data) = try await send(
            method: "GET", path: Endpoint.changes, query: query,
            timeoutSeconds: max(Self.requestTimeoutSeconds, Double(wait) + Self.waitMarginSeconds))
        return try TransportDecoding.decode(ChangesPage.self, status: status, body: data, server: serverName)
    }

    public func index(after: String?, limit: Int) async throws(TransportError) -> IndexPage {
        var query = [URLQueryItem(name: Endpoint.Query.limit, value: String(limit))]
        if let after { query.append(URLQueryItem(name: Endpoint.Query.after, value: after)) }
        let (status, data) = try await send(method: "GET", path: Endpoint.index, query: query)
        return try TransportDecoding.decode(IndexPage.self, status: status, body: data, server: serverName)
    }

    public func fetch(_ request: FetchRequest) async throws(TransportError) -> FetchResponse {
        let body = try TransportDecoding.encode(request)
        let (status, data) = try await send(method: "POST", path: Endpoint.fetch, body: body)
        return try TransportDecoding.decode(FetchResponse.self, status: status, body: data, server: serverName)
    }

    /// The account the server names for this token (`IndexPage.account`),
    /// asked with one small index request that gives up after `timeoutSeconds`.
    public func namedAccount(timeoutSeconds: Double) async throws(TransportError) -> String? {
        let query = [URLQueryItem(name: Endpoint.Query.limit, value: "1")]
        let (status, data) = try await send(
            method: "GET", path: Endpoint.index, query: query, timeoutSeconds: timeoutSeconds)
        return try TransportDecoding.decode(IndexPage.self, status: status, body: data, server: serverName).account
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
            throw .badURL("\(baseURL) is not a usable server URL")
        }
        let prefix = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = prefix + path
        if !query.isEmpty {
            components.queryItems = query
            // `+` would read as a space on the server.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        }
        guard let url = components.url else {
            throw .badURL("cannot build a request URL from \(baseURL)")
        }
        return url
    }

    func send(
        method: String, path: String, query: [URLQueryItem] = [], body: Data? = nil,
        timeoutSeconds: Double = requestTimeoutSeconds, authorized: Bool = true
    ) async throws(TransportError) -> (Int, Data) {
        var headers: [String] = []
        if authorized { headers.append("Authorization: \(authorization)") }
        var wireBody = body
        if let body {
            headers.append("Content-Type: application/json")
            // JSON of note text shrinks to about a third: an initial upload
            // then sends fewer bytes than the tree holds. A small push is
            // compressed only when that saves more than the header costs.
            if let compressed = Gzip.compressedForWire(body, minimumBytes: Self.compressBodiesOverBytes) {
                headers.append("Content-Encoding: gzip")
                wireBody = compressed
            }
        }
        let request = CurlRequest(
            method: method, url: try url(path, query: query).absoluteString, headers: headers, body: wireBody,
            timeoutSeconds: timeoutSeconds, caFile: caFile)
        do {
            let response = try await client.perform(request)
            count(sent: response.bytesSent, received: response.bytesReceived)
            return (response.status, response.body)
        } catch {
            count(sent: 0, received: 0)
            throw Self.map(error)
        }
    }

    private func count(sent: Int, received: Int) {
        counters.withLock {
            $0.requests += 1
            $0.bytesSent += sent
            $0.bytesReceived += received
        }
    }

    /// Every failure to get an answer means "no network" to the engine,
    /// except a server that answered something that is not HTTP, a URL that
    /// cannot work, and a certificate that is not trusted. All of them fail
    /// the run and are retried; none refuses a change.
    static func map(_ error: CurlError) -> TransportError {
        switch error.code {
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return .badURL(error.message)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return .untrustedCertificate(error.message)
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_RANGE_ERROR:
            return .serverBroke("unreadable answer (\(error.message))")
        case CURLE_OPERATION_TIMEDOUT:
            return .offline("timed out")
        case CURLE_COULDNT_CONNECT:
            return .offline("connection refused")
        case CURLE_COULDNT_RESOLVE_HOST:
            return .offline("cannot find the server's host")
        case CURLE_ABORTED_BY_CALLBACK:
            return .offline("cancelled")
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE:
            return .offline("connection lost (\(error.message))")
        default:
            return .offline(error.message)
        }
    }
}
