import Foundation
import LoopbackHTTP

/// The load generator's requests: one bearer token, JSON bodies.
extension RawHTTPConnection {
    func send(method: String, target: String, token: String, body: Data = Data()) throws {
        var headers = ["Authorization": "Bearer \(token)"]
        if method == "POST" { headers["Content-Type"] = "application/json" }
        guard write(Self.requestBytes(method: method, target: target, headers: headers, body: body)) else {
            throw LoadError("send failed: errno \(errno)")
        }
    }

    /// Reads one response: status and body.
    func receive() throws -> (status: Int, body: Data) {
        let response = try readResponse()
        return (response.status, response.body)
    }
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
