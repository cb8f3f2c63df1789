import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Synchronization
import TestSupport
import Testing

/// The feed never has a gap a reader could pass over (DESIGN.md "Server rules").
@Suite struct GapFreeFeedTests {
    /// Seconds of load; `NOTESFS_GAP_SECONDS` overrides the 10.
    static let seconds = Double(ProcessInfo.processInfo.environment["NOTESFS_GAP_SECONDS"] ?? "") ?? 10
    /// The writers go on past `seconds` until this many changes were
    /// acknowledged (a busy machine is slower, not wrong), up to `secondsMax`.
    static let changesMin = 200
    static let secondsMax = 300.0

    /// What the writers were told: version → entity.
    final class Acknowledged: Sendable {
        private let state = Mutex<[Int64: EntityRef]>([:])
        func record(_ version: Int64, _ ref: EntityRef) { state.withLock { $0[version] = ref } }
        var all: [Int64: EntityRef] { state.withLock { $0 } }
    }

    @Test(arguments: [TransportKind.http])
    func eightWritersAndTwoReadersSeeAGaplessFeedThatEndsEqual(transport: TransportKind) async throws {
        let h = try Harness(.sqlite, transport)
        let token = try await h.account()
        let acknowledged = Acknowledged()
        let seed = Seeds.one(9)
        let began = ContinuousClock.now
        let writing = SharedCount(8)
        let writersGoOn: @Sendable () -> Bool = {
            let elapsed = ContinuousClock.now - began
            if elapsed >= .seconds(Self.secondsMax) { return false }
            return elapsed < .seconds(Self.seconds) || acknowledged.all.count < Self.changesMin
        }

        try await withThrowingTaskGroup(of: [String].self) { group in
            for writer in 0..<8 {
                group.addTask {
                    defer { writing.add(-1) }
                    var mine: [NoteID: Int64] = [:]
                    var generator = SplitMix64(seed: seed &+ UInt64(writer))
                    while writersGoOn() {
                        var changes: [Change] = []
                        var used = Set<NoteID>()
                        for _ in 0..<Int.random(in: 1...4, using: &generator) {
                            if let (id, version) = mine.randomElement(using: &generator), !used.contains(id),
                                Bool.random(using: &generator)
                            {
                                used.insert(id)
                                changes.append(Make.note(id, body: "w\(writer) v\(version + 1)\n", base: version))
                            } else {
                                let id = NoteID()
                                used.insert(id)
                                changes.append(Make.note(id, body: "w\(writer) new\n"))
                            }
                        }
                        let results = try await h.push(changes, token: token)
                        for (change, result) in zip(changes, results) {
                            guard let version = result.appliedVersion else {
                                return ["writer \(writer): \(change.ref) got \(result.status)"]
                            }
                            mine[NoteID(change.id)] = version
                            acknowledged.record(version, change.ref)
                        }
                    }
                    return []
                }
            }
            for reader in 0..<2 {
                group.addTask {
                    var problems: [String] = []
                    var seen: [EntityRef: Int64] = [:]
                    var cursor: SyncCursor?
                    var last: Int64 = 0
                    func pull(wait: Int?) async throws -> Bool {
                        let page = try await h.changes(token: token, since: cursor, limit: 50, wait: wait)
                        for row in page.changes {
                            if row.version <= last { problems.append("reader \(reader): \(row.version) after \(last)") }
                            last = row.version
                            seen[row.ref] = row.version
                        }
                        cursor = page.nextCursor
                        return page.hasMore
                    }
                    while writing.value > 0 { _ = try await pull(wait: 1) }
                    // Every writer has stopped: drain what is left.
                    while try await pull(wait: nil) {}
                    // Gapless: every acknowledged version was seen, or its entity at a later one.
                    for (version, ref) in acknowledged.all where (seen[ref] ?? 0) < version {
                        problems.append("reader \(reader) passed over version \(version) of \(ref)")
                    }
                    let final = try await h.drain(token: token).rows
                    let server = Dictionary(uniqueKeysWithValues: final.map { ($0.ref, $0.version) })
                    if server != seen { problems.append("reader \(reader) ended with \(seen.count) entities, server has \(server.count)") }
                    return problems
                }
            }
            var problems: [String] = []
            for try await found in group { problems += found }
            #expect(problems.isEmpty, "\(Seeds.describe(seed)): \(problems.prefix(10))")
        }
        let versions = acknowledged.all.keys.sorted()
        #expect(versions.count >= Self.changesMin, "only \(versions.count) changes in \(Self.secondsMax) s")
        #expect(versions == Array(1...Int64(versions.count)), "acknowledged versions are 1...n")
        await h.close()
    }
}
