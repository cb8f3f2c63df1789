import Foundation
import NotesModel
import PostgresKit
import SyncProtocol
import Testing

@testable import SyncServer
@testable import SyncServerPostgres

/// The group commit's lookups by key stay index lookups even when their plan
/// was made while the tables were nearly empty: a prepared statement keeps its
/// generic plan for the connection's life, and a sequential scan chosen then
/// would read every row of a table that only grows.
@Suite(.serialized) struct PostgresPlanTests {
    @Test func theGroupLookupsUseTheKeyIndexesInGenericPlansOnTinyTables() async throws {
        guard PostgresTestCluster.cluster() != nil else { return }
        let h = try Harness(.postgres)
        let token = try await h.account("plans")
        #expect(try await h.pushRaw([Make.note()], token: token).status == 200)  // one row in each table
        let store = try #require(h.store as? PostgresServerStore)
        let account = try #require(try await store.account(named: "plans")).id
        let changeId = ChangeID()
        let noteId = NoteID()
        let overlay = PostgresGroupOverlay(counters: [:])
        let lookups: [(table: String, statement: PostgresConnection.Statement?, arguments: String)] = [
            ("seen_changes", overlay.prefetchRecordsStatement([(account, [changeId])]),
             "'{\(account.rawValue)}', '{\(changeId)}'"),
            ("entities", overlay.prefetchEntitiesStatement([(account, [EntityRef(kind: .note, id: noteId.uuid)])]),
             "'{\(account.rawValue)}', '{note}', '{\(noteId)}'"),
        ]
        let connection = try PostgresConnection(conninfo: store.conninfo, settings: PostgresServerStore.plannerSettings)
        for (index, lookup) in lookups.enumerated() {
            let statement = try #require(lookup.statement)
            try connection.execute("PREPARE lookup\(index) AS " + statement.sql)
            let rows = try connection.execute("EXPLAIN EXECUTE lookup\(index)(\(lookup.arguments))")
            let plan = try (0..<rows.rowCount).map { try rows.string($0, 0) }.joined(separator: "\n")
            #expect(!plan.contains("Seq Scan on \(lookup.table)"), "\(plan)")
            #expect(plan.contains("Index Scan using \(lookup.table)_pkey"), "\(plan)")
        }
        // The group's write finds the rows it updates and the rows it copies
        // into the history by key too (every parameter is an array, so the
        // generic plan does not depend on the values given here).
        try connection.execute("PREPARE write AS " + PostgresGroupOverlay.writeSQL)
        let nulls = Array(repeating: "NULL", count: 35).joined(separator: ", ")
        let rows = try connection.execute("EXPLAIN EXECUTE write(\(nulls))")
        let plan = try (0..<rows.rowCount).map { try rows.string($0, 0) }.joined(separator: "\n")
        #expect(!plan.contains("Seq Scan on entities"), "\(plan)")
        #expect(plan.components(separatedBy: "Index Scan using entities_pkey on entities e").count == 3, "\(plan)")
        #expect(!plan.contains("Conflict"), "rows known to exist are updated, not upserted: \(plan)")
        // The pool's connections (reads, accounts, tokens) are made with the same settings.
        let shown = try await store.pool.withConnection { connection in
            [try connection.execute("SHOW enable_seqscan").string(0, 0),
             try connection.execute("SHOW plan_cache_mode").string(0, 0)]
        }
        // Generic plans always: the lookups were otherwise planned anew on every run.
        #expect(shown == ["off", "force_generic_plan"])
        await h.close()
    }
}
