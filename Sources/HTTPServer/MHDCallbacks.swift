import CMicroHTTPD
import Foundation
import SyncServer

// The C callbacks libmicrohttpd calls on its worker threads. They live here,
// not in main.swift, and are nonisolated (PLATFORM.md trap 1). Each one only
// translates between C and `DaemonContext` / `RequestContext`.

/// `MHD_AccessHandlerCallback`: called once with the headers, once per body
/// chunk, once at the end of the body, and once more after a resume.
func mhdAccessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let conCls, let uploadDataSize else { return .NO }
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()

    guard let existing = conCls.pointee else {
        // First call: the headers are here, the body is not.
        let request = RequestContext(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { String(cString: $0) } ?? "/",
            query: queryArguments(connection),
            authorization: header(connection, "Authorization"),
            acceptsGzip: header(connection, "Accept-Encoding").map(acceptsGzip) ?? false,
            contentEncoding: header(connection, "Content-Encoding"),
            declaredLength: header(connection, "Content-Length").flatMap { Int($0) },
            client: clientAddress(connection))
        conCls.pointee = Unmanaged.passRetained(request).toOpaque()
        daemon.requestBegan()
        if let length = request.declaredLength, length > daemon.requestBodyBytesMax {
            // Answer before reading the body; libmicrohttpd then closes the connection.
            return daemon.queue(daemon.payloadTooLarge(), for: request, on: connection)
        }
        return .YES
    }
    let request = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()

    if uploadDataSize.pointee > 0 {
        guard let uploadData else { return .NO }
        let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
        uploadDataSize.pointee = 0
        // A body past the limit without a Content-Length: close the connection.
        return request.append(chunk, limit: daemon.requestBodyBytesMax) ? .YES : .NO
    }

    let next = request.advance(bodyLimit: daemon.requestBodyBytesMax)
    if let response = next.response {
        return daemon.queue(response, for: request, on: connection)
    }
    guard let serverRequest = next.request else { return .YES }
    guard daemon.claimHandler() else {
        return daemon.queue(daemon.stoppingResponse(), for: request, on: connection)
    }
    MHD_suspend_connection(connection)
    daemon.handle(serverRequest, for: request, resuming: ConnectionHandle(pointer: connection))
    return .YES
}

/// `MHD_RequestCompletedCallback`: the request is over (answered, timed out,
/// closed by the client or by shutdown); release its context.
func mhdRequestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_RequestTerminationCode
) {
    guard let cls, let conCls, let pointer = conCls.pointee else { return }
    conCls.pointee = nil
    let daemon = Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue()
    let request = Unmanaged<RequestContext>.fromOpaque(pointer).takeRetainedValue()
    let stillHandling = request.markClosed()
    if code != .REQUEST_TERMINATED_COMPLETED_OK {
        daemon.requestAborted(request, reason: terminationReason(code), stillHandling: stillHandling)
    }
    daemon.requestEnded()
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

private func clientAddress(_ connection: OpaquePointer) -> String {
    guard let address = cmhd_client_address(connection) else { return "-" }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
            var addr = v4.pointee.sin_addr
            guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return "-" }
            return text(buffer)
        }
    case AF_INET6:
        return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
            var addr = v6.pointee.sin6_addr
            guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return "-" }
            return text(buffer)
        }
    default:
        return "-"
    }
}

/// The text of a NUL-terminated buffer.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
