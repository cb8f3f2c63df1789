extension TransportKind {
    static let all: [TransportKind] = [.direct]
}
