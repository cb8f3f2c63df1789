import CMicroHTTPD
import Foundation
import SyncServer

// The C callbacks libmicrohttpd calls on its worker threads. They live here,
// not in main.swift, and are nonisolated (PLATFORM.md trap 1). Each one only
// translates between C and `DaemonContext` / `RequestContext`.

/// The request-line callback (`MHD_OPTION_URI_LOG_CALLBACK`): called with the
/// raw request target before libmicrohttpd parses its query. Its result, a
/// retained `RequestSlot`, is the request's `con_cls` from then on.
func mhdRequestLine(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls, let uri else { return nil }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    let target = String(cString: uri)
    var parameters = 0
    var path = Substring(target)
    if let mark = target.firstIndex(of: "?") {
        path = target[..<mark]
        parameters = target[target.index(after: mark)...].split(separator: "&").count
        if parameters > daemon.queryParametersMax {
            // libmicrohttpd keeps each parameter in the connection's small
            // memory pool and, when that runs out, closes the connection with
            // no answer. Cutting the query here (the request line lies in
            // libmicrohttpd's own writable buffer, which it NUL-terminates
            // the same way) lets the request reach the handler, which
            // answers 400 and logs it.
            let offset = target.utf8.distance(from: target.startIndex, to: mark) + 1
            UnsafeMutablePointer(mutating: uri).advanced(by: offset).pointee = 0
        }
    }
    let slot = RequestSlot(
        path: LogText.escaped(path, limit: 100), queryParameterCount: parameters,
        client: connection.flatMap { cmhd_client_address($0) }.flatMap(ClientAddress.init))
    return Unmanaged.passRetained(slot).toOpaque()
}

/// `MHD_AcceptPolicyCallback`: a new connection, before libmicrohttpd makes
/// anything for it; one refused is closed at once, unread.
func mhdAcceptPolicy(
    _ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t
) -> MHD_Result {
    guard let cls, let address, let client = ClientAddress(address) else { return .YES }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    return daemon.admit(client) ? .YES : .NO
}

/// `MHD_AccessHandlerCallback`: called once with the headers, once per body
/// chunk, once at the end of the body, and once more after each resume.
func mhdAccessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let conCls, let uploadDataSize, let slotPointer = conCls.pointee else {
        return .NO
    }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    let slot = Unmanaged<RequestSlot>.fromOpaque(slotPointer).takeUnretainedValue()

    guard let request = slot.request else {
        // First call: the whole head is here, no body byte has been read.
        let head = RequestHead(
            fields: headerFields(connection), version: version.map { String(cString: $0) } ?? "")
        let request = RequestContext(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/",
            query: queryArguments(connection),
            authorization: header(connection, "Authorization"),
            acceptsGzip: header(connection, "Accept-Encoding").map(acceptsGzip) ?? false,
            contentEncoding: header(connection, "Content-Encoding"),
            declaredLength: header(connection, "Content-Length").flatMap { Int($0) },
            client: slot.client)
        slot.request = request
        daemon.requestBegan()
        return daemon.begin(request, head: head, queryParameterCount: slot.queryParameterCount, on: connection)
    }

    switch request.takeCredentialOutcome() {
    case .refused(let response)?:
        // Unread, the body is dropped with the connection.
        return daemon.queue(response, for: request, on: connection, closing: true)
    case .accepted? where uploadDataSize.pointee == 0:
        // The call right after the resume: the body comes next.
        daemon.deadlines.enter(.body, connection)
        return .YES
    case .checking?:
        return .YES
    default:
        break
    }

    if uploadDataSize.pointee > 0 {
        guard let uploadData else { return .NO }
        let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
        uploadDataSize.pointee = 0
        // A body past the limit without a Content-Length: close the connection.
        return request.append(chunk, limit: daemon.requestBodyBytesMax) ? .YES : .NO
    }

    return daemon.dispatch(request, on: connection)
}

/// `MHD_RequestCompletedCallback`: the request is over (answered, timed out,
/// closed by the client or by shutdown); release its slot.
func mhdRequestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let cls, let conCls, let pointer = conCls.pointee else { return }
    conCls.pointee = nil
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    let slot = Unmanaged<RequestSlot>.fromOpaque(pointer).takeRetainedValue()
    // A kept-alive connection now waits for its next request's head.
    if let connection { daemon.deadlines.enter(.head, connection) }
    guard let request = slot.request else {
        if code != .REQUEST_TERMINATED_COMPLETED_OK {
            daemon.requestLineAborted(slot, reason: terminationReason(code))
        }
        return
    }
    let stillHandling = request.markClosed()
    if code != .REQUEST_TERMINATED_COMPLETED_OK {
        daemon.requestAborted(request, reason: terminationReason(code), stillHandling: stillHandling)
    }
    daemon.requestEnded()
}

/// `MHD_NotifyConnectionCallback`: a connection opened or closed.
func mhdConnectionNotify(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED: daemon.deadlines.opened(connection, socket: cmhd_connection_socket(connection))
    case .CONNECTION_NOTIFY_CLOSED: daemon.deadlines.closed(connection)
    default: break
    }
}

/// libmicrohttpd's own messages, formatted by the shim: escaped into the log,
/// within the refusal log's budget (a connection limit speaks once per refusal).
func mhdMessage(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let cls, let message else { return }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    daemon.refusals.log(.libmicrohttpd, from: nil) {
        let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        return "libmicrohttpd: \(LogText.escaped(text, limit: 300, keepingSpaces: true))"
    }
}

/// Every header line of the request, duplicates included, in order.
private func headerFields(_ connection: OpaquePointer) -> [(name: String, value: String)] {
    final class Box {
        var fields: [(name: String, value: String)] = []
    }
    let box = Box()
    let iterator: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls else { return .YES }
        let box = Unmanaged<Box>.fromOpaque(cls).takeUnretainedValue()
        box.fields.append((key.map { String(cString: $0) } ?? "", value.map { String(cString: $0) } ?? ""))
        return .YES
    }
    withExtendedLifetime(box) {
        _ = MHD_get_connection_values(
            connection, .HEADER_KIND, iterator, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.fields
}

/// Collects query arguments through `MHD_get_connection_values`.
private func queryArguments(_ connection: OpaquePointer) -> [String: String] {
    final class Box {
        var values: [String: String] = [:]
    }
    let box = Box()
    let iterator: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let box = Unmanaged<Box>.fromOpaque(cls).takeUnretainedValue()
        if box.values.count < 32 {
            box.values[String(cString: key)] = value.map { String(cString: $0) } ?? ""
        }
        return .YES
    }
    withExtendedLifetime(box) {
        _ = MHD_get_connection_values(
            connection, .GET_ARGUMENT_KIND, iterator, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.values
}

private func header(_ connection: OpaquePointer, _ name: String) -> String? {
    MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
}

private func acceptsGzip(_ header: String) -> Bool {
    header.split(separator: ",").contains { part in
        let fields = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.first?.lowercased() == "gzip" else { return false }
        return !fields.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" }
    }
}

private func terminationReason(_ code: MHD_RequestTerminationCode) -> String {
    switch code {
    case .REQUEST_TERMINATED_WITH_ERROR: "error"
    case .REQUEST_TERMINATED_TIMEOUT_REACHED: "timeout"
    case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: "shutdown"
    case .REQUEST_TERMINATED_READ_ERROR: "read-error"
    case .REQUEST_TERMINATED_CLIENT_ABORT: "client-abort"
    default: "code-\(code.rawValue)"
    }
}
