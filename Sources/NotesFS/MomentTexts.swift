import Foundation
import FuseKit
import NotesModel
import NotesStore
import Synchronization

/// How a moment from the server gets the text its tree came without (the
/// command sets it in `ServerMoment`; the mount knows nothing of HTTP).
public struct ServerMomentTexts: Sendable {
    /// A note's text at one version of the moment's tree.
    public struct Text: Sendable {
        public var id: UUID
        public var version: Int64
        public var text: Data

        public init(id: UUID, version: Int64, text: Data) {
            self.id = id
            self.version = version
            self.text = text
        }
    }

    /// The text of note `id` at `version`; nil when the server no longer keeps it.
    public var one: @Sendable (_ id: UUID, _ version: Int64) async throws -> Data?
    /// Every note's text in the moment's tree, handed to `receive` a page at a time.
    public var all: @Sendable (_ receive: @escaping @Sendable ([Text]) -> Void) async throws -> Void

    public init(
        one: @escaping @Sendable (UUID, Int64) async throws -> Data?,
        all: @escaping @Sendable (@escaping @Sendable ([Text]) -> Void) async throws -> Void
    ) {
        self.one = one
        self.all = all
    }
}

/// The texts of one moment from the server, fetched when a note is first
/// opened and kept with the moment. After a few notes were opened (a
/// `grep -r`, `diff -r` or `cp -r` is under way) every other text is fetched
/// in the background, page by page, so the rest are read from memory. An open
/// waits for its own text at most `waitSeconds`; a fetch that fails, times
/// out or brings a text whose size is not the listed one is `EIO` and a log
/// line, never other bytes.
final class MomentTexts: Sendable {
    /// How long an open waits for its note's text.
    static let waitSeconds = 20.0
    /// Notes opened one by one before the rest are fetched in the background.
    static let opensBeforeFetchingAll = 8

    private final class Fetch: Sendable {
        let done = DispatchGroup()
        let result = Mutex<Result<Data?, any Error>?>(nil)
    }

    private enum Background { case idle, running, done, failed }

    private struct State {
        var texts: [Int: Data] = [:]
        var fetches: [Int: Fetch] = [:]
        var opens = 0
        var background = Background.idle
    }

    private let state = Mutex(State())
    private let tree: MomentTree
    private let source: ServerMomentTexts
    private let momentName: String
    private let log: MountLog

    init(tree: MomentTree, source: ServerMomentTexts, momentName: String, log: MountLog) {
        self.tree = tree
        self.source = source
        self.momentName = momentName
        self.log = log
    }

    /// Texts fetched so far (for the README).
    var fetchedCount: Int { state.withLock { $0.texts.count } }

    /// The text of note node `index`, version `version` on the server.
    func text(ofNode index: Int, version: Int64) throws -> Data {
        let node = tree.nodes[index]
        guard let id = node.id else { throw FileSystemError.isADirectory }
        let (cached, fetch, startAll) = state.withLock { state -> (Data?, Fetch?, Bool) in
            if let text = state.texts[index] { return (text, nil, false) }
            state.opens += 1
            let startAll = state.opens >= Self.opensBeforeFetchingAll && state.background == .idle
            if startAll { state.background = .running }
            if let running = state.fetches[index] { return (nil, running, startAll) }
            let fetch = Fetch()
            fetch.done.enter()
            state.fetches[index] = fetch
            let source = source
            Task.detached { [self] in
                let result: Result<Data?, any Error>
                do { result = .success(try await source.one(id, version)) } catch { result = .failure(error) }
                keep(result, node: index, from: fetch)
                fetch.done.leave()
            }
            return (nil, fetch, startAll)
        }
        if startAll { fetchAll() }
        if let cached { return cached }
        guard let fetch, fetch.done.wait(timeout: .now() + Self.waitSeconds) == .success else {
            return try failed(index, "the server did not send it within \(Int(Self.waitSeconds)) seconds")
        }
        switch fetch.result.withLock({ $0 }) {
        case .success(let text?)? where Int64(text.count) == node.size:
            return text
        case .success(let text?)?:
            return try failed(index, "the server sent \(text.count) bytes where its listing said \(node.size)")
        case .success(nil)?:
            return try failed(index, "the server no longer keeps version \(version) (trimmed)")
        case .failure(let error)?:
            return try failed(index, "\(error)")
        case nil:
            return try failed(index, "the fetch ended without an answer")
        }
    }

    private func failed(_ index: Int, _ why: String) throws -> Data {
        log.warning(
            "moments: cannot read \(momentName)/\(tree.path(of: index)): \(why); the open fails with EIO")
        throw FileSystemError.io
    }

    /// Keeps a fetched text when it is the listed size, and forgets the fetch.
    private func keep(_ result: Result<Data?, any Error>, node index: Int, from fetch: Fetch) {
        fetch.result.withLock { $0 = result }
        state.withLock { state in
            if state.fetches[index] === fetch { state.fetches[index] = nil }
            if case .success(let text?) = result, Int64(text.count) == tree.nodes[index].size {
                state.texts[index] = text
            }
        }
    }

    /// Fetches every text of the tree in the background; those already here,
    /// and any whose version or size is not the listed one, are left alone.
    private func fetchAll() {
        var nodes: [UUID: (node: Int, version: Int64, size: Int64)] = [:]
        for (index, node) in tree.nodes.enumerated() {
            if let id = node.id, case .server(let version)? = node.body { nodes[id] = (index, version, node.size) }
        }
        let wanted = nodes
        let source = source
        Task.detached { [self] in
            do {
                try await source.all { page in
                    self.state.withLock { state in
                        for text in page {
                            guard let node = wanted[text.id], node.version == text.version,
                                Int64(text.text.count) == node.size, state.texts[node.node] == nil
                            else { continue }
                            state.texts[node.node] = text.text
                        }
                    }
                }
                state.withLock { $0.background = .done }
            } catch {
                state.withLock { $0.background = .failed }
                log.warning("moments: fetching the texts of \(momentName) in the background failed (\(error)); "
                    + "notes are fetched as they are opened")
            }
        }
    }
}
