import CCurl
import Foundation
import Synchronization

/// Why libcurl got no HTTP answer: its error code and message.
struct CurlError: Error, Sendable, CustomStringConvertible {
    let code: CURLcode
    let message: String

    var description: String { message }
}

/// An HTTP request as `CurlClient` sends it.
struct CurlRequest: Sendable {
    var method: String
    var url: String
    /// `Name: value` lines.
    var headers: [String]
    var body: Data?
    var timeoutSeconds: Double
    /// A PEM file of certificates to trust instead of the system's; nil = the system's.
    var caFile: String? = nil
}

/// An HTTP answer, with what crossed the wire.
struct CurlResponse: Sendable {
    var status: Int
    /// The body, gzip already undone.
    var body: Data
    /// Request header and body bytes as sent.
    var bytesSent: Int
    /// Response header and body bytes as received (compressed).
    var bytesReceived: Int
}

/// libcurl's easy interface, wrapped once. Handles are pooled, so each
/// keeps its connection alive for the next request; a request runs on a
/// thread of its own (a long poll blocks for its whole wait) and never on
/// Swift's cooperative pool.
///
/// FoundationNetworking's `URLSession` sits on the same libcurl but uploads
/// request bodies at 1–2 MB/s on Linux (docs/sync.md); this client sends a
/// 280 KB push in a few milliseconds.
final class CurlClient: Sendable {
    private static let globalInit: CURLcode = ccurl_global_init()

    private let idle = Mutex<[EasyHandle]>([])
    /// Bumped by `cancelAll()`; a request started before the bump aborts.
    private let generation = Generation()

    static let connectTimeoutSeconds: Double = 10
    private static let idleHandlesMax = 4

    init() {}

    /// Sends `request` and waits for the whole answer. Cancelling the calling
    /// task aborts the transfer within about a second (libcurl's progress
    /// callback is how a blocked transfer learns of it).
    func perform(_ request: CurlRequest) async throws(CurlError) -> CurlResponse {
        let cancel = CancelFlag()
        let result: Result<CurlResponse, CurlError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                HTTPThreads.shared.run { [self] in
                    continuation.resume(returning: performBlocking(request, cancel: cancel))
                }
            }
        } onCancel: {
            cancel.set()
        }
        return try result.get()
    }

    /// Aborts every request in flight (each fails with `CURLE_ABORTED_BY_CALLBACK`).
    func cancelAll() {
        generation.bump()
    }

    private func performBlocking(_ request: CurlRequest, cancel: CancelFlag) -> Result<CurlResponse, CurlError> {
        guard Self.globalInit == CURLE_OK else {
            return .failure(CurlError(code: Self.globalInit, message: "libcurl failed to initialise"))
        }
        guard let handle = idle.withLock({ $0.popLast() }) ?? EasyHandle() else {
            return .failure(CurlError(code: CURLE_OUT_OF_MEMORY, message: "libcurl could not make a handle"))
        }
        let result = handle.perform(request, abort: Abort(cancel: cancel, generation: generation))
        idle.withLock { handles in
            if handles.count < Self.idleHandlesMax { handles.append(handle) }
        }
        return result
    }
}

/// Set when the task waiting for a request is cancelled.
private final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

private final class Generation: Sendable {
    private let value = Atomic<Int>(0)
    func bump() { value.add(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// When a transfer should stop: its task was cancelled or `cancelAll()` ran
/// since it began.
private struct Abort {
    let cancel: CancelFlag
    let generation: Generation
    let started: Int

    init(cancel: CancelFlag, generation: Generation) {
        self.cancel = cancel
        self.generation = generation
        started = generation.current
    }

    var now: Bool { cancel.isSet || generation.current != started }
}

/// What the C callbacks of one transfer reach through their context pointer.
/// Used by the one thread running the transfer.
private final class Transfer {
    var body = Data()
    let abort: Abort
    init(abort: Abort) { self.abort = abort }
}

private let receiveBody: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if let data, length > 0 {
        transfer.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    }
    return length
}

private let watchForAbort: ccurl_progress_callback = { context, _, _, _, _ in
    guard let context else { return 0 }
    return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().abort.now ? 1 : 0
}

/// One `CURL *`, used by one request at a time (taken from the pool and put
/// back after), so `@unchecked Sendable` holds.
private final class EasyHandle: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    func perform(_ request: CurlRequest, abort: Abort) -> Result<CurlResponse, CurlError> {
        // Clears the last request's options; the connection stays open for reuse.
        curl_easy_reset(handle)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        // Without `Expect:` libcurl asks `Expect: 100-continue` for bodies over
        // 1 KB and waits for an interim answer before sending them. `Accept:`
        // drops libcurl's `Accept: */*`, which says nothing (13 bytes a request).
        for line in request.headers + ["Expect:", "Accept:"] {
            guard let extended = curl_slist_append(headerList, line) else {
                return .failure(CurlError(code: CURLE_OUT_OF_MEMORY, message: "out of memory for headers"))
            }
            headerList = extended
        }
        let transfer = Transfer(abort: abort)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let timeout = max(1, Int(request.timeoutSeconds * 1_000))
        let body = request.body ?? Data()
        let code: CURLcode = withExtendedLifetime(transfer) {
            body.withUnsafeBytes { bodyBytes in
                errorBuffer.withUnsafeMutableBufferPointer { errors in
                    errors[0] = 0
                    var setup = [
                        ccurl_set_string(handle, CURLOPT_URL, request.url),
                        ccurl_set_long(handle, CURLOPT_NOSIGNAL, 1),
                        ccurl_set_string(handle, CURLOPT_ACCEPT_ENCODING, "gzip"),
                        ccurl_set_string(handle, CURLOPT_USERAGENT, "notesfs"),
                        ccurl_set_long(handle, CURLOPT_TIMEOUT_MS, timeout),
                        ccurl_set_long(
                            handle, CURLOPT_CONNECTTIMEOUT_MS,
                            min(timeout, Int(CurlClient.connectTimeoutSeconds * 1_000))),
                        ccurl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1),
                        ccurl_set_pointer(handle, CURLOPT_HTTPHEADER, headerList),
                        ccurl_set_pointer(handle, CURLOPT_ERRORBUFFER, errors.baseAddress),
                        ccurl_set_write_callback(handle, receiveBody, context),
                        ccurl_set_progress_callback(handle, watchForAbort, context),
                    ]
                    switch request.method {
                    case "GET":
                        setup.append(ccurl_set_long(handle, CURLOPT_HTTPGET, 1))
                    case "POST":
                        setup.append(ccurl_set_long(handle, CURLOPT_POST, 1))
                        setup.append(ccurl_set_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bodyBytes.count)))
                        // Points at the caller's bytes (no copy): they outlive the transfer.
                        setup.append(
                            ccurl_set_pointer(
                                handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress)))
                    default:
                        setup.append(ccurl_set_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
                    }
                    // TLS 1.2 at least: 1.0 and 1.1 have known weaknesses (RFC 8996).
                    setup.append(ccurl_set_long(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)))
                    if let caFile = request.caFile {
                        // libcurl copies the string; a reset handle is back on the system's store.
                        setup.append(ccurl_set_string(handle, CURLOPT_CAINFO, caFile))
                    }
                    if let failed = setup.first(where: { $0 != CURLE_OK }) { return failed }
                    return curl_easy_perform(handle)
                }
            }
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let summary = String(cString: curl_easy_strerror(code))
            return .failure(CurlError(code: code, message: detail.isEmpty ? summary : detail))
        }
        var status = 0
        var requestHeaderBytes = 0
        var responseHeaderBytes = 0
        var bodyBytesReceived: curl_off_t = 0
        _ = ccurl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_get_long(handle, CURLINFO_REQUEST_SIZE, &requestHeaderBytes)
        _ = ccurl_get_long(handle, CURLINFO_HEADER_SIZE, &responseHeaderBytes)
        _ = ccurl_get_offset(handle, CURLINFO_SIZE_DOWNLOAD_T, &bodyBytesReceived)
        return .success(
            CurlResponse(
                status: status, body: transfer.body, bytesSent: requestHeaderBytes + body.count,
                bytesReceived: responseHeaderBytes + Int(bodyBytesReceived)))
    }
}
