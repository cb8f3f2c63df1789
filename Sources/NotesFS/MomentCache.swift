import Foundation
import FuseKit
import NotesModel
import NotesStore
import Synchronization

/// The tree of a moment as the server's history has it.
public struct ServerMoment: Sendable {
    public var items: [MomentItem]
    /// From when the account's history is whole (nil: always).
    public var keptSince: Date?
    /// Where the text of notes listed without it (`MomentBody.server`) comes from.
    public var texts: ServerMomentTexts?

    public init(items: [MomentItem], keptSince: Date?, texts: ServerMomentTexts? = nil) {
        self.items = items
        self.keptSince = keptSince
        self.texts = texts
    }
}

/// One moment shown under `.notesfs/at`, with where its tree came from.
struct ShownMoment: Sendable {
    enum Source: Sendable {
        case server(keptSince: Date?)
        /// This machine's records; `why` says why not the server's.
        case thisMachine(why: String, laterTexts: Int)
    }

    var name: String
    var at: Date
    var tree: MomentTree
    var source: Source
    /// The texts of notes the server listed without them; nil when the tree holds them all.
    var texts: MomentTexts?
    /// Uptime when it was made; it is made again once `lifetime` has passed.
    var madeAt: UInt64
    var lifetimeNanoseconds: UInt64
}

/// The moments of `.notesfs/at`: each is built once (from the server's
/// history when it answers in time, else from this machine's records) and
/// kept in memory, a few at a time, under a number its inodes carry; later
/// requests are served from memory. A FUSE request waits for the server at
/// most `serverWaitSeconds`; a fetch still running then goes on, and its
/// tree serves the moment once the fallback's short lifetime is over.
final class MomentCache: Sendable {
    /// Moments kept at once; the least recently used goes first.
    static let momentsMax = 4
    /// How long a request waits for the server's tree.
    static let serverWaitSeconds = 5.0
    /// A moment from this machine's records is built again after this long,
    /// asking the server again; so is one from the server that is less than
    /// a minute old (its tree may still change).
    static let shortLifetimeNanoseconds: UInt64 = 30_000_000_000
    /// A moment from the server further back than a minute is kept this long.
    static let longLifetimeNanoseconds: UInt64 = 600_000_000_000

    private final class Fetch: Sendable {
        let done = DispatchGroup()
        let result = Mutex<Result<ServerMoment, any Error>?>(nil)
    }

    private struct State {
        var moments: [(number: UInt64, moment: ShownMoment)] = []
        var nextNumber: UInt64 = 1
        var fetches: [Int64: Fetch] = [:]
    }

    private let state = Mutex(State())
    private let tree: NotesTree
    private let hooks: MountHooks
    private let log: MountLog

    init(tree: NotesTree, hooks: MountHooks, log: MountLog) {
        self.tree = tree
        self.hooks = hooks
        self.log = log
    }

    /// The moment kept under `number`, if it is still kept.
    func moment(_ number: UInt64) -> ShownMoment? {
        state.withLock { state in state.moments.first { $0.number == number }?.moment }
    }

    /// The kept moments, most recently made first (for the README).
    func kept() -> [ShownMoment] {
        state.withLock { state in state.moments.map(\.moment).sorted { $0.madeAt > $1.madeAt } }
    }

    /// The number of the moment `name` names, built now if it is not kept;
    /// nil when `name` is not a moment.
    func resolve(_ name: String) throws -> UInt64? {
        guard let at = MomentTime.parse(name) else { return nil }
        let key = Int64((at.timeIntervalSince1970 * 1_000).rounded(.down))
        let now = DispatchTime.now().uptimeNanoseconds
        if let number = state.withLock({ state -> UInt64? in
            guard let index = state.moments.lastIndex(where: {
                $0.moment.at == at && now &- $0.moment.madeAt < $0.moment.lifetimeNanoseconds
            }) else { return nil }
            // Most recently used last.
            let kept = state.moments.remove(at: index)
            state.moments.append(kept)
            return kept.number
        }) {
            return number
        }
        let moment = try build(name: name, at: at, key: key)
        return state.withLock { state in
            // Another request built the same moment meanwhile: one tree serves both.
            let now = DispatchTime.now().uptimeNanoseconds
            if let built = state.moments.last(where: {
                $0.moment.at == at && now &- $0.moment.madeAt < $0.moment.lifetimeNanoseconds
            }) {
                return built.number
            }
            let number = state.nextNumber
            state.nextNumber += 1
            state.moments.append((number, moment))
            if state.moments.count > Self.momentsMax { state.moments.removeFirst(state.moments.count - Self.momentsMax) }
            return number
        }
    }

    private func build(name: String, at: Date, key: Int64) throws -> ShownMoment {
        let now = DispatchTime.now().uptimeNanoseconds
        let recent = at.timeIntervalSinceNow > -60
        guard let fetcher = hooks.momentFetcher() else {
            return try offline(
                name: name, at: at, why: "this notes folder has no server, so only this machine's records exist")
        }
        let fetch = state.withLock { state -> Fetch in
            if let running = state.fetches[key] { return running }
            // Fetches that ended after their requests stopped waiting are
            // kept for the next build of their moment, a few at a time.
            let ended = state.fetches.filter { $0.value.result.withLock { $0 } != nil }.keys
            for old in ended.dropLast(Self.momentsMax) { state.fetches[old] = nil }
            let fetch = Fetch()
            fetch.done.enter()
            state.fetches[key] = fetch
            Task.detached {
                let result: Result<ServerMoment, any Error>
                do { result = .success(try await fetcher(at)) } catch { result = .failure(error) }
                fetch.result.withLock { $0 = result }
                fetch.done.leave()
            }
            return fetch
        }
        guard fetch.done.wait(timeout: .now() + Self.serverWaitSeconds) == .success else {
            return try offline(
                name: name, at: at,
                why: "the server did not answer within \(Int(Self.serverWaitSeconds)) seconds (asked again in "
                    + "\(Self.shortLifetimeNanoseconds / 1_000_000_000) seconds)")
        }
        state.withLock { state in
            if state.fetches[key] === fetch { state.fetches[key] = nil }
        }
        switch fetch.result.withLock({ $0 }) {
        case .success(let server)?:
            let tree = MomentTree(items: server.items)
            let lazy = server.items.contains { if case .server? = $0.body { true } else { false } }
            let texts = lazy ? server.texts.map { MomentTexts(tree: tree, source: $0, momentName: name, log: log) } : nil
            return ShownMoment(
                name: name, at: at, tree: tree, source: .server(keptSince: server.keptSince), texts: texts,
                madeAt: now, lifetimeNanoseconds: recent ? Self.shortLifetimeNanoseconds : Self.longLifetimeNanoseconds)
        case .failure(let error)?:
            return try offline(name: name, at: at, why: "the server could not be asked (\(error))")
        case nil:
            return try offline(name: name, at: at, why: "the server's answer was lost")
        }
    }

    private func offline(name: String, at: Date, why: String) throws -> ShownMoment {
        let nanoseconds = Int64((at.timeIntervalSince1970 * 1e9).rounded(.down))
        let (items, laterTexts) = OfflineMoment.items(at: nanoseconds, from: try tree.momentRecords())
        return ShownMoment(
            name: name, at: at, tree: MomentTree(items: items), source: .thisMachine(why: why, laterTexts: laterTexts),
            texts: nil, madeAt: DispatchTime.now().uptimeNanoseconds, lifetimeNanoseconds: Self.shortLifetimeNanoseconds)
    }

    /// What `.notesfs/at/README` says: how to name a moment, and where each
    /// kept moment came from.
    func readme() -> String {
        var lines = [
            "notesfs: your notes and folders as they were at a past moment, read-only.",
            "",
            "Open .notesfs/at/<moment>/ by name; moments are not listed here. A moment is",
            "\(MomentTime.syntax), e.g. .notesfs/at/2026-12-03T13:10/ (a date alone is",
            "its midnight). ls, grep -r, diff -r and cp -r work in it; to bring an old text",
            "back, copy it out. 'notesfs log PATH' lists a note's versions and",
            "'notesfs show PATH@MOMENT' prints one.",
            "",
        ]
        let moments = kept()
        if moments.isEmpty {
            lines.append("No moment was opened since the mount started.")
        } else {
            lines.append("Moments opened lately, newest first:")
        }
        for moment in moments {
            let counts = "\(moment.tree.noteCount) notes, \(moment.tree.folderCount) folders"
            let head = "\(moment.name) (\(MomentTime.localText(moment.at))): \(counts)"
            switch moment.source {
            case .server(let keptSince):
                var line = "\(head), from the server's history."
                if let texts = moment.texts {
                    line += " Note texts are fetched as they are opened (\(texts.fetchedCount) so far)."
                }
                if let keptSince, keptSince > moment.at {
                    line += " The server keeps whole history only since \(MomentTime.localText(keptSince)),"
                        + " so notes whose versions of then were trimmed may be missing."
                }
                lines.append(line)
            case .thisMachine(let why, let laterTexts):
                var line = "\(head), OFFLINE: from this machine's own records, because \(why)."
                line += " It may be incomplete: it holds what this machine had seen by then, at the names"
                    + " and folders it knows now."
                if laterTexts > 0 {
                    line += " \(laterTexts) note\(laterTexts == 1 ? "" : "s") changed or deleted since with no older"
                        + " copy kept here, and may show a later text."
                }
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
