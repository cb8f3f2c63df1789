import Foundation
import PostgresKit
import SyncServer
import SyncServerPostgres
import TestSupport

/// The PostgreSQL cluster shared by this test process's PostgreSQL tests,
/// started on first use and stopped when the process exits. Each store gets
/// its own schema (named after its test directory), so tests never see each
/// other's data and reopening a directory reopens its data.
enum PostgresTestCluster {
    /// Settings for test clusters: no fsync (these tests check semantics,
    /// not power-loss durability; the benchmark runs with fsync on).
    static let settings = ["fsync": "off", "shared_buffers": "64MB"]

    static let shared: Result<PostgresCluster, any Error> = Result {
        try PostgresCluster.start(settings: settings)
    }

    /// The cluster, or nil after saying loudly why PostgreSQL tests skip
    /// (a test failure instead when NOTESFS_REQUIRE_ALL_TESTS=1).
    static func cluster() -> PostgresCluster? {
        switch shared {
        case .success(let cluster): return cluster
        case .failure(let error):
            skipLoudly("PostgreSQL tests: cannot start a cluster: \(error)")
            return nil
        }
    }

    /// True when PostgreSQL targets join the contract suite: the cluster
    /// started, or CI requires them (then their harnesses fail).
    static var included: Bool {
        if case .success = shared { return true }
        if ProcessInfo.processInfo.environment["NOTESFS_REQUIRE_ALL_TESTS"] == "1" { return true }
        FileHandle.standardError.write(
            Data("⚠️  SKIPPING PostgreSQL contract targets: \((try? shared.get()).map { _ in "" } ?? describe(shared))\n".utf8))
        return false
    }

    private static func describe(_ result: Result<PostgresCluster, any Error>) -> String {
        if case .failure(let error) = result { return String(describing: error) }
        return ""
    }

    /// A schema name for a test directory: lowercase letters, digits and `_`.
    static func schema(for directory: TemporaryDirectory) -> String {
        let name = directory.url.lastPathComponent.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        return "t_" + String(name).suffix(50)
    }

    /// The conninfo of `schema` in the shared cluster, creating the schema.
    static func conninfo(schema: String) throws -> String {
        let cluster = try shared.get()
        let admin = try PostgresConnection(conninfo: cluster.conninfo())
        try admin.executeScript("CREATE SCHEMA IF NOT EXISTS \(try admin.quoteIdentifier(schema))")
        return cluster.conninfo() + " options='-c search_path=\(schema)'"
    }
}

extension StoreFactory {
    static let postgres = StoreFactory(name: "postgres") { directory in
        try PostgresServerStore(
            conninfo: try PostgresTestCluster.conninfo(schema: PostgresTestCluster.schema(for: directory)),
            options: PostgresServerStore.Options(pool: PostgresPool.Options(connectionsMax: 6)))
    }
}
