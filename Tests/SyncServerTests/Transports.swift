extension TransportKind {
    static let http = TransportKind(name: "http") { try HTTPTransport(server: $0) }
    static let all: [TransportKind] = [.direct, .http]
}
