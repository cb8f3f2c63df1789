import Foundation
import NotesModel
import SyncProtocol
import TestSupport
import Testing

/// The server reads push bodies and writes push results and change pages
/// without `JSONDecoder`/`JSONEncoder`. These tests hold the direct paths to
/// the coders: whatever the reader accepts, the decoder accepts as the same
/// value; whatever the writer writes, the encoder writes byte for byte.
@Suite struct DirectWireTests {
    /// Text with everything JSON makes awkward: quotes, backslashes, slashes,
    /// every control byte, DEL, line separators, accents, emoji.
    static func awkwardText(_ random: inout SplitMix64, maxLength: Int = 40) -> String {
        let pieces: [String] = [
            "a", "Z", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1F}", "\u{7F}",
            "\u{2028}", "\u{2029}", "\u{85}", "é", "e\u{301}", "😀", "∕", "{", "}", "[", "]", ":", ",", "\u{FEFF}",
        ]
        return (0..<random.int(0..<maxLength)).map { _ in random.pick(pieces) }.joined()
    }

    static func change(_ random: inout SplitMix64) -> Change {
        let base: Int64? = random.percent(30) ? nil : Int64(random.int(1..<1_000_000))
        let id = random.uuid()
        let changeId = ChangeID(random.uuid())
        switch random.int(0..<4) {
        case 0:
            return Change(
                changeId: changeId, kind: random.percent(50) ? .note : .folder, id: id, op: .delete, baseVersion: base)
        case 1:
            let parent = random.percent(50) ? nil : FolderID(random.uuid())
            return Change(
                changeId: changeId, kind: .folder, id: id, op: .put, baseVersion: base,
                folder: FolderPayload(name: awkwardText(&random), parentId: parent))
        case 2:
            let bytes = Data((0..<random.int(0..<64)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            return Change(
                changeId: changeId, kind: .note, id: id, op: .put, baseVersion: base,
                note: NotePayload(title: awkwardText(&random), bodyBytes: bytes, folderId: FolderID(random.uuid())))
        default:
            return Change(
                changeId: changeId, kind: .note, id: id, op: .put, baseVersion: base,
                note: NotePayload(
                    title: awkwardText(&random), body: awkwardText(&random, maxLength: 400),
                    folderId: random.percent(50) ? nil : FolderID(random.uuid()),
                    bodyEncoding: random.percent(20) ? .utf8 : nil))
        }
    }

    static func pushBody(_ random: inout SplitMix64) throws -> Data {
        let request = PushRequest(
            device: DeviceID(random.uuid()), deviceName: random.percent(30) ? awkwardText(&random) : nil,
            changes: (0..<random.int(0..<4)).map { _ in change(&random) },
            cursor: random.percent(50) ? nil : SyncCursor(epoch: "e\(random.int(0..<9))", counter: Int64(random.int(0..<99))))
        var text = String(decoding: try WireCoding.encoder().encode(request), as: UTF8.self)
        // Whitespace between tokens, as other encoders write it.
        if random.percent(30) {
            text = text.replacingOccurrences(of: #"",""#, with: "\",\n  \"")
                .replacingOccurrences(of: #"":"#, with: "\" : ")
        }
        if random.percent(20) { text = " \t\r\n" + text + "\n" }
        return Data(text.utf8)
    }

    @Test func theReaderTakesWhatTheEncoderWritesAsTheDecoderDoes() throws {
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            let body = try Self.pushBody(&random)
            let decoded = try WireCoding.decoder().decode(PushRequest.self, from: body)
            let read = PushRequest.read(body)
            #expect(read == decoded, "\(Seeds.describe(seed))")
            // Equal strings may differ in bytes (Swift compares canonically); the server stores bytes.
            #expect(
                read?.changes.map { [$0.note?.title, $0.note?.body, $0.folder?.name].map { Array(($0 ?? "").utf8) } }
                    == decoded.changes.map { [$0.note?.title, $0.note?.body, $0.folder?.name].map { Array(($0 ?? "").utf8) } },
                "\(Seeds.describe(seed))")
        }
    }

    @Test func whatTheReaderTakesFromDamagedBodiesTheDecoderTakesAlike() throws {
        let splinters: [[UInt8]] = [
            [], Array("\"".utf8), Array("\\".utf8), Array(",".utf8), Array(":".utf8), Array("{".utf8), Array("}".utf8),
            Array("[".utf8), Array("]".utf8), Array("null".utf8), Array("0".utf8), Array("-1".utf8), Array("1.5".utf8),
            Array("1e3".utf8), Array("\\u00".utf8), Array("\\ud800".utf8), [0x00], [0x1F], [0xC3], [0xFF], [0xE2, 0x80],
            Array(#""x":1,"#.utf8), Array(#""note":null,"#.utf8), Array(#""baseVersion":"#.utf8), Array("true".utf8),
        ]
        var accepted = 0
        for seed in Seeds.list(count: 2_000) {
            var random = SplitMix64(seed: seed)
            var bytes = Array(try Self.pushBody(&random))
            for _ in 0..<random.int(1..<4) where !bytes.isEmpty {
                let at = random.int(0..<bytes.count)
                switch random.int(0..<3) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(contentsOf: random.pick(splinters), at: at)
                default: bytes.replaceSubrange(at..<min(bytes.count, at + random.int(1..<8)), with: random.pick(splinters))
                }
            }
            let body = Data(bytes)
            guard let read = PushRequest.read(body) else { continue }
            accepted += 1
            let decoded = try? WireCoding.decoder().decode(PushRequest.self, from: body)
            #expect(read == decoded, "\(Seeds.describe(seed)): \(String(decoding: body, as: UTF8.self))")
        }
        // Some damage leaves a valid request (a character changed inside a title): both paths ran.
        #expect(accepted > 0)
    }

    @Test(arguments: [
        #"{"device":"0190a000-0000-7000-8000-000000000001","changes":[],"device":"0190a000-0000-7000-8000-000000000002"}"#,
        #"{"device":"0190a000-0000-7000-8000-000000000001","changes":[],"extra":1}"#,
        #"{"device":"0190a000-0000-7000-8000-000000000001","changes":[{"changeId":"0190a000-0000-7000-8000-000000000001","kind":"note","id":"0190a000-0000-7000-8000-000000000001","op":"delete","baseVersion":1.0}]}"#,
        #"{"device":"0190a000-0000-7000-8000-000000000001","changes":[{"changeId":"0190a000-0000-7000-8000-000000000001","kind":"note","id":"0190a000-0000-7000-8000-000000000001","op":"put","baseVersion":null}]}"#,
        #"{"device":"{0190a000-0000-7000-8000-000000000001}","changes":[]}"#,
        #"{"device":"0190a000-0000-7000-8000-000000000001","changes":[]} x"#,
        "\u{FEFF}{\"device\":\"0190a000-0000-7000-8000-000000000001\",\"changes\":[]}",
    ])
    func theReaderLeavesAnythingUnusualToTheDecoder(body: String) {
        #expect(PushRequest.read(Data(body.utf8)) == nil)
    }

    @Test func theWriterWritesResultsAndPagesAsTheEncoderDoes() throws {
        let encoder = WireCoding.encoder()
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            func entity() -> EntityVersion {
                let change = Self.change(&random)
                return EntityVersion(
                    kind: change.kind, id: change.id, version: Int64(random.int(1..<Int.max)), changeId: change.changeId,
                    deleted: change.op == .delete, note: change.note, folder: change.folder)
            }
            let outcome: ChangeResult.Outcome
            switch random.int(0..<4) {
            case 0: outcome = .applied(version: random.percent(5) ? Int64.max : Int64(random.int(1..<Int.max)))
            case 1: outcome = .conflict(current: nil)
            case 2: outcome = .conflict(current: entity())
            default: outcome = .refused(reason: random.pick([.noteTooLarge, .nameTooLong, .folderCycle]), message: Self.awkwardText(&random))
            }
            let result = ChangeResult(changeId: ChangeID(random.uuid()), outcome: outcome)
            #expect(result.wireJSON == (try encoder.encode(result)), "\(Seeds.describe(seed))")

            let epoch = "epoch-\(random.int(0..<1000))"
            let page = ChangesPage(
                changes: (0..<random.int(0..<5)).map { _ in entity() },
                nextCursor: SyncCursor(epoch: epoch, counter: Int64(random.int(0..<Int.max))), hasMore: random.percent(50),
                epoch: epoch, from: random.percent(50) ? nil : SyncCursor(epoch: epoch, counter: 7),
                account: random.percent(80) ? "00112233445566778899aabbccddeeff" : nil,
                historySeconds: random.percent(80) ? Int64(random.int(1..<Int(Int32.max))) : nil)
            #expect(page.wireJSON == (try encoder.encode(page)), "\(Seeds.describe(seed))")
        }
    }

    @Test func theWriterWritesPastTreePagesAsTheEncoderDoes() throws {
        let encoder = WireCoding.encoder()
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            func time() -> Date { Date(timeIntervalSince1970: Double(random.int(0..<4_000_000_000_000)) / 1000) }
            let entries = (0..<random.int(0..<5)).map { _ in
                let change = Self.change(&random)
                return HistoricEntity(
                    kind: change.kind, id: change.id, version: Int64(random.int(1..<Int.max)), changeId: change.changeId,
                    time: time(), device: random.percent(70) ? DeviceID(random.uuid()) : nil,
                    deleted: change.op == .delete, note: change.note, folder: change.folder)
            }
            let page = TreePage(
                at: time(), entries: entries, hasMore: random.percent(50),
                nextAfter: random.percent(50) ? "note:\(random.uuid())" : nil,
                keptSince: random.percent(30) ? time() : nil,
                account: random.percent(80) ? "00112233445566778899aabbccddeeff" : nil)
            #expect(page.wireJSON == (try encoder.encode(page)), "\(Seeds.describe(seed))")
        }
    }

    @Test func theWriterWritesPastTreesWithoutTextAsTheEncoderDoesAndTheDecoderReadsThemBack() throws {
        let encoder = WireCoding.encoder()
        for seed in Seeds.list(count: 300) {
            var random = SplitMix64(seed: seed)
            func time() -> Date { Date(timeIntervalSince1970: Double(random.int(0..<4_000_000_000_000)) / 1000) }
            let entries = (0..<random.int(0..<5)).map { _ in
                let note = random.percent(70)
                return TreeSummaryEntry(
                    kind: note ? .note : .folder, id: random.uuid(), version: Int64(random.int(1..<Int.max)),
                    changeId: ChangeID(random.uuid()), time: time(),
                    device: random.percent(70) ? DeviceID(random.uuid()) : nil, name: Self.awkwardText(&random),
                    parentId: random.percent(50) ? nil : random.uuid(),
                    size: note ? Int64(random.int(0..<(16 << 20))) : 0)
            }
            let page = TreeSummaryPage(
                at: time(), entries: entries, hasMore: random.percent(50),
                nextAfter: random.percent(50) ? "note:\(random.uuid())" : nil,
                keptSince: random.percent(30) ? time() : nil,
                account: random.percent(80) ? "00112233445566778899aabbccddeeff" : nil)
            #expect(page.wireJSON == (try encoder.encode(page)), "\(Seeds.describe(seed))")
            let decoded = try WireCoding.decoder().decode(TreeSummaryPage.self, from: page.wireJSON)
            #expect(try encoder.encode(decoded) == page.wireJSON, "\(Seeds.describe(seed))")
            #expect(decoded.entries.map(\.name) == page.entries.map(\.name), "\(Seeds.describe(seed))")
            #expect(TreeSummaryPage.read(page.wireJSON) == decoded, "\(Seeds.describe(seed))")
            // And what the reader takes from damaged pages, the decoder takes alike.
            var bytes = Array(page.wireJSON)
            for _ in 0..<random.int(1..<4) where !bytes.isEmpty {
                let at = random.int(0..<bytes.count)
                let splinter = random.pick([
                    Array("\"".utf8), Array(",".utf8), Array("0".utf8), Array("-".utf8), Array("null".utf8),
                    Array("true".utf8), Array("1.5".utf8), Array("\\u00e9".utf8), [0xC3], Array(#""x":1,"#.utf8),
                ])
                switch random.int(0..<3) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(contentsOf: splinter, at: at)
                default: bytes.replaceSubrange(at..<min(bytes.count, at + random.int(1..<8)), with: splinter)
                }
            }
            if let read = TreeSummaryPage.read(Data(bytes)) {
                #expect(read == (try? WireCoding.decoder().decode(TreeSummaryPage.self, from: Data(bytes))),
                        "\(Seeds.describe(seed)): \(String(decoding: bytes, as: UTF8.self))")
            }
        }
    }
}