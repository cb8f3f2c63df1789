import Foundation
import NotesModel
import SyncProtocol
import SyncServer
import Testing

/// docs/openapi.yaml says exactly what the server does: every documented
/// (method, path, status) is provoked against a running server, and every
/// provocation here is documented.
@Suite struct OpenAPIDocumentTests {
    static let documentPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.yaml").path

    /// "METHOD /path STATUS" for every response in the document.
    static func documentedResponses() throws -> Set<String> {
        let text = try String(contentsOfFile: documentPath, encoding: .utf8)
        var results = Set<String>()
        var inPaths = false
        var path: String?
        var method: String?
        var inResponses = false
        for line in text.components(separatedBy: "\n") {
            let indent = line.prefix(while: { $0 == " " }).count
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if indent == 0 { inPaths = trimmed == "paths:"; continue }
            guard inPaths, !trimmed.isEmpty else { continue }
            if indent == 2, trimmed.hasSuffix(":") { path = String(trimmed.dropLast()); method = nil; continue }
            if indent == 4, trimmed.hasSuffix(":") { method = String(trimmed.dropLast()).uppercased(); inResponses = false; continue }
            if indent == 6 { inResponses = trimmed == "responses:"; continue }
            if inResponses, indent == 8, trimmed.hasPrefix("'"), let path, let method {
                results.insert("\(method) \(path) \(trimmed.dropFirst().prefix(3))")
            }
        }
        return results
    }

    /// A schema of `components.schemas`: its documented properties and the required ones.
    static func documentedSchema(_ name: String) throws -> (properties: Set<String>, required: Set<String>) {
        let text = try String(contentsOfFile: documentPath, encoding: .utf8)
        var inSchema = false
        var inProperties = false
        var properties = Set<String>()
        var required = Set<String>()
        for line in text.components(separatedBy: "\n") {
            let indent = line.prefix(while: { $0 == " " }).count
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            if indent <= 4 { inSchema = indent == 4 && trimmed == "\(name):"; inProperties = false; continue }
            guard inSchema else { continue }
            if indent == 6 {
                inProperties = trimmed == "properties:"
                if trimmed.hasPrefix("required: ["), trimmed.hasSuffix("]") {
                    let list = trimmed.dropFirst("required: [".count).dropLast()
                    required = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                }
                continue
            }
            if inProperties, indent == 8, let colon = trimmed.firstIndex(of: ":") {
                properties.insert(String(trimmed[..<colon]))
            }
        }
        return (properties, required)
    }

    /// The top-level keys of a JSON object reply.
    static func keys(_ reply: Reply) -> Set<String> {
        guard let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any] else { return [] }
        return Set(object.keys)
    }

    @Test(arguments: [
        ("GET", Endpoint.changes, "ChangesPage"), ("GET", Endpoint.index, "IndexPage"),
        ("POST", Endpoint.push, "PushResponse"),
    ])
    func everyFieldOfAnAnswerIsDocumentedAndEveryRequiredOneIsSent(method: String, path: String, schema: String)
        async throws
    {
        let documented = try Self.documentedSchema(schema)
        #expect(documented.required.contains("account"), "\(schema) documents its account key")
        for factory in StoreFactory.all {
            let h = try Harness(factory, .http)
            let token = try await h.account()
            _ = try await h.push(Make.note(), token: token)
            let push = try WireCoding.encoder().encode(PushRequest(device: DeviceID(), changes: [Make.note()]))
            let reply =
                method == "POST"
                ? try await h.send(method, path, token: token, body: push)
                : try await h.send(method, path, token: token, query: ["limit": "1"])
            #expect(reply.status == 200)
            let keys = Self.keys(reply)
            #expect(keys.isSubset(of: documented.properties), "\(schema) sends undocumented fields: \(keys.subtracting(documented.properties))")
            #expect(documented.required.isSubset(of: keys), "\(schema) lacks required fields: \(documented.required.subtracting(keys))")
            await h.close()
        }
    }

    @Test func everyDocumentedRouteAndStatusIsWhatTheServerAnswers() async throws {
        let documented = try Self.documentedResponses()
        #expect(documented.count > 20)
        let h = try Harness(.sqlite, .http)
        let token = try await h.account()
        let revoked = try await h.account("gone")
        try await AccountManager(store: h.store).revoke(name: "gone")
        let device = DeviceID()
        @Sendable func push(_ changes: [Change], cursor: SyncCursor? = nil) throws -> Data {
            try WireCoding.encoder().encode(PushRequest(device: device, changes: changes, cursor: cursor))
        }
        let reused = Make.note()
        _ = try await h.push(reused, token: token)
        var alteredChange = reused
        alteredChange.note?.title = "changed"
        let altered = alteredChange
        let epoch = try await h.changes(token: token).epoch
        let fetchMany = try WireCoding.encoder().encode(FetchRequest(entities: (0..<201).map { _ in .note(NoteID()) }))
        let fetchOne = try WireCoding.encoder().encode(FetchRequest(entities: [.note(NoteID())]))

        typealias Probe = @Sendable () async throws -> Reply
        var probes: [String: Probe] = [:]
        probes["POST /v1/push 200"] = { try await h.send("POST", Endpoint.push, token: token, body: push([Make.note()])) }
        probes["POST /v1/push 400"] = { try await h.send("POST", Endpoint.push, token: token, body: Data("{".utf8)) }
        probes["POST /v1/push 401"] = { try await h.send("POST", Endpoint.push, token: revoked, body: push([Make.note()])) }
        probes["POST /v1/push 405"] = { try await h.send("GET", Endpoint.push, token: token) }
        probes["POST /v1/push 409"] = { try await h.send("POST", Endpoint.push, token: token, body: push([altered])) }
        probes["POST /v1/push 410"] = { try await h.send("POST", Endpoint.push, token: token, body: push([Make.note()], cursor: SyncCursor(epoch: "restored-elsewhere", counter: 1))) }
        probes["POST /v1/push 413"] = { try await h.send("POST", Endpoint.push, token: token, body: push((0..<101).map { _ in Make.note() })) }
        probes["GET /v1/changes 200"] = { try await h.send("GET", Endpoint.changes, token: token) }
        probes["GET /v1/changes 400"] = { try await h.send("GET", Endpoint.changes, token: token, query: ["since": "x"]) }
        probes["GET /v1/changes 401"] = { try await h.send("GET", Endpoint.changes, token: nil) }
        probes["GET /v1/changes 405"] = { try await h.send("POST", Endpoint.changes, token: token) }
        probes["GET /v1/changes 410"] = { try await h.send("GET", Endpoint.changes, token: token, query: ["since": SyncCursor(epoch: epoch, counter: 999).rawValue]) }
        probes["GET /v1/index 200"] = { try await h.send("GET", Endpoint.index, token: token) }
        probes["GET /v1/index 400"] = { try await h.send("GET", Endpoint.index, token: token, query: ["limit": "many"]) }
        probes["GET /v1/index 401"] = { try await h.send("GET", Endpoint.index, token: "nfs_bad") }
        probes["GET /v1/index 405"] = { try await h.send("POST", Endpoint.index, token: token) }
        probes["POST /v1/fetch 200"] = { try await h.send("POST", Endpoint.fetch, token: token, body: fetchOne) }
        probes["POST /v1/fetch 400"] = { try await h.send("POST", Endpoint.fetch, token: token, body: Data(#"{"entities":[{"kind":"x"}]}"#.utf8)) }
        probes["POST /v1/fetch 401"] = { try await h.send("POST", Endpoint.fetch, token: nil, body: fetchOne) }
        probes["POST /v1/fetch 405"] = { try await h.send("GET", Endpoint.fetch, token: token) }
        probes["POST /v1/fetch 413"] = { try await h.send("POST", Endpoint.fetch, token: token, body: fetchMany) }
        let entity = [Endpoint.Query.entity: reused.ref.description]
        let oneVersion = entity.merging([Endpoint.Query.version: "1"]) { $1 }
        let at = [Endpoint.Query.at: WireTime.format(Date())]
        probes["GET /v1/history/versions 200"] = { try await h.send("GET", Endpoint.historyVersions, token: token, query: entity) }
        probes["GET /v1/history/versions 400"] = { try await h.send("GET", Endpoint.historyVersions, token: token) }
        probes["GET /v1/history/versions 401"] = { try await h.send("GET", Endpoint.historyVersions, token: revoked, query: entity) }
        probes["GET /v1/history/versions 405"] = { try await h.send("POST", Endpoint.historyVersions, token: token, query: entity) }
        probes["GET /v1/history/version 200"] = { try await h.send("GET", Endpoint.historyVersion, token: token, query: oneVersion) }
        probes["GET /v1/history/version 400"] = { try await h.send("GET", Endpoint.historyVersion, token: token, query: entity) }
        probes["GET /v1/history/version 401"] = { try await h.send("GET", Endpoint.historyVersion, token: nil, query: oneVersion) }
        probes["GET /v1/history/version 405"] = { try await h.send("POST", Endpoint.historyVersion, token: token, query: oneVersion) }
        probes["GET /v1/history/tree 200"] = { try await h.send("GET", Endpoint.historyTree, token: token, query: at) }
        probes["GET /v1/history/tree 400"] = { try await h.send("GET", Endpoint.historyTree, token: token, query: [Endpoint.Query.at: "now"]) }
        probes["GET /v1/history/tree 401"] = { try await h.send("GET", Endpoint.historyTree, token: "nfs_bad", query: at) }
        probes["GET /v1/history/tree 405"] = { try await h.send("POST", Endpoint.historyTree, token: token, query: at) }
        probes["GET /healthz 200"] = { try await h.send("GET", Endpoint.healthz, token: nil) }
        let manyParameters = Dictionary(uniqueKeysWithValues: (0..<40).map { ("p\($0)", "1") })
        probes["GET /healthz 400"] = { try await h.send("GET", Endpoint.healthz, token: nil, query: manyParameters) }
        probes["GET /metrics 400"] = { try await h.send("GET", Endpoint.metrics, token: nil, query: ["x": "1"]) }
        probes["GET /healthz 405"] = { try await h.send("POST", Endpoint.healthz, token: nil) }
        probes["GET /metrics 200"] = { try await h.send("GET", Endpoint.metrics, token: nil) }
        probes["GET /metrics 405"] = { try await h.send("DELETE", Endpoint.metrics, token: nil) }
        // 503s come last: they need the store closed under the running server.
        let unavailable = [
            "POST /v1/push 503", "GET /v1/changes 503", "GET /v1/index 503", "POST /v1/fetch 503",
            "GET /v1/history/versions 503", "GET /v1/history/version 503", "GET /v1/history/tree 503",
        ]

        #expect(Set(probes.keys).union(unavailable) == documented)
        for key in probes.keys.sorted() {
            guard let probe = probes[key], let expected = Int(key.split(separator: " ")[2]) else { continue }
            let reply = try await probe()
            #expect(reply.status == expected, "\(key): \(reply.text.prefix(200))")
            if expected != 200 { #expect(reply.errorCode != nil, "\(key) has an error body") }
        }
        await h.store.close()
        #expect(try await h.send("POST", Endpoint.push, token: token, body: push([Make.note()])).status == 503)
        #expect(try await h.send("GET", Endpoint.changes, token: token).status == 503)
        #expect(try await h.send("GET", Endpoint.index, token: token).status == 503)
        #expect(try await h.send("POST", Endpoint.fetch, token: token, body: fetchOne).status == 503)
        #expect(try await h.send("GET", Endpoint.historyVersions, token: token, query: entity).status == 503)
        #expect(try await h.send("GET", Endpoint.historyVersion, token: token, query: oneVersion).status == 503)
        #expect(try await h.send("GET", Endpoint.historyTree, token: token, query: at).status == 503)
        await h.close()
    }

    @Test func everyFieldOfAHistoryAnswerIsDocumentedAndEveryRequiredOneIsSent() async throws {
        for factory in StoreFactory.all {
            let h = try Harness(factory, .http)
            let token = try await h.account()
            let folder = FolderID(), note = NoteID()
            _ = try await h.push([Make.folder(folder), Make.note(note, folder: folder)], token: token)
            _ = try await h.push(Make.note(note, body: "edited\n", folder: folder, base: 2), token: token)
            let entity = [Endpoint.Query.entity: EntityRef.note(note).description]
            let answers: [(String, [String: String], String, String?)] = [
                (Endpoint.historyVersions, entity.merging(["limit": "1"]) { $1 }, "VersionsPage", "versions"),
                (Endpoint.historyVersion, entity.merging(["version": "2"]) { $1 }, "VersionResponse", "entity"),
                (Endpoint.historyTree, ["at": WireTime.format(Date().addingTimeInterval(60)), "limit": "1"], "TreePage",
                 "entries"),
                (Endpoint.historyTree, ["at": WireTime.format(Date().addingTimeInterval(60)), "bodies": "false"],
                 "TreeSummaryPage", "entries"),
            ]
            for (path, query, schema, inner) in answers {
                let reply = try await h.send("GET", path, token: token, query: query)
                #expect(reply.status == 200)
                let documented = try Self.documentedSchema(schema)
                let keys = Self.keys(reply)
                #expect(keys.isSubset(of: documented.properties), "\(schema) sends undocumented fields: \(keys.subtracting(documented.properties))")
                #expect(documented.required.isSubset(of: keys), "\(schema) lacks required fields: \(documented.required.subtracting(keys))")
                // The items inside: every field documented, the required ones sent.
                let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
                let items = (object?[inner ?? ""] as? [[String: Any]]) ?? [(object?[inner ?? ""] as? [String: Any])].compactMap { $0 }
                #expect(!items.isEmpty, "\(schema) has no \(inner ?? "") to check")
                let itemSchemas = ["VersionsPage": "VersionSummary", "TreeSummaryPage": "TreeSummaryEntry"]
                let itemSchema = try Self.documentedSchema(itemSchemas[schema] ?? "HistoricEntity")
                for item in items {
                    let itemKeys = Set(item.keys)
                    #expect(itemKeys.isSubset(of: itemSchema.properties), "\(schema) items send \(itemKeys.subtracting(itemSchema.properties))")
                    #expect(itemSchema.required.isSubset(of: itemKeys), "\(schema) items lack \(itemSchema.required.subtracting(itemKeys))")
                }
            }
            await h.close()
        }
    }
}
