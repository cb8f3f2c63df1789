// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way, down DESIGN.md's "Parts" table. The C libraries
// come from Debian through pkg-config; no outside Swift package is used.
let package = Package(
    name: "notesfs",
    products: [
        .executable(name: "notesfs", targets: ["notesfs"])
    ],
    targets: [
        // MARK: C system libraries
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev", "fuse3"])]
        ),

        // MARK: Libraries
        // A SQLite VFS that hands each write-ahead log commit to the kernel in two writes.
        .target(name: "CSQLiteBatchedLog", dependencies: ["CSQLite"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite", "CSQLiteBatchedLog"]),
        // posix_spawn, once: the mount (fusermount3), the command and the tests start children through it.
        .target(name: "ProcessKit"),
        // A raw HTTP/1.1 client over loopback, shared by the load generator and the tests.
        .target(name: "LoopbackHTTP"),
        // SHA-256's compression with the CPU's SHA instructions, for NotesModel's SHA256 when the CPU has them.
        .target(name: "CSHA256"),
        .target(name: "NotesModel", dependencies: ["CSHA256"]),
        .target(name: "NotesStore", dependencies: ["NotesModel", "SQLiteKit"]),
        .target(name: "SyncProtocol", dependencies: ["NotesModel", "CZlib"]),
        .target(name: "PostgresKit", dependencies: ["CPostgres"]),
        // The server's rules, the store protocol and group commit's queue; each backend in a target of its own.
        .target(name: "SyncServer", dependencies: ["SyncProtocol", "NotesModel"]),
        .target(name: "SyncServerSQLite", dependencies: ["SyncServer", "SyncProtocol", "NotesModel", "SQLiteKit"]),
        .target(name: "SyncServerPostgres", dependencies: ["SyncServer", "SyncProtocol", "NotesModel", "PostgresKit"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "SyncServer", "SyncProtocol"]),
        .target(name: "SyncEngine", dependencies: ["NotesStore", "NotesModel", "SyncProtocol", "CCurl"]),
        // The libfuse binding: session, callback table, replies, mounting; no notes knowledge.
        .target(name: "FuseKit", dependencies: ["CFuse", "ProcessKit"]),
        .target(name: "NotesFS", dependencies: ["NotesStore", "NotesModel", "FuseKit"]),

        // MARK: The command
        .executableTarget(
            name: "notesfs",
            dependencies: [
                "NotesModel", "NotesStore", "NotesFS", "FuseKit", "SyncProtocol", "SyncServer", "SyncServerSQLite",
                "SyncServerPostgres", "HTTPServer", "SyncEngine", "PostgresKit", "ProcessKit",
            ]
        ),
        .executableTarget(
            name: "notesfs-loadgen",
            dependencies: [
                "NotesModel", "SyncProtocol", "SyncServer", "SyncServerSQLite", "SyncServerPostgres", "LoopbackHTTP",
            ]
        ),

        // The seeded chaos simulation: real stores, engines, server and mount
        // request handling; simulated network, kernel, clocks, randomness and
        // scheduling (docs/simulation.md). It links libfuse but never mounts.
        .target(
            name: "NotesSimulation",
            dependencies: [
                "NotesModel", "NotesStore", "NotesFS", "FuseKit", "SQLiteKit", "SyncEngine", "SyncProtocol",
                "SyncServer", "SyncServerSQLite",
            ]
        ),
        .executableTarget(
            name: "notesfs-simulate",
            dependencies: ["NotesSimulation"]
        ),

        // MARK: Test and benchmark programs
        // Commits saves in a loop until CrashSafetyTests kills it.
        .executableTarget(
            name: "notesfs-crash-child",
            dependencies: ["NotesModel", "NotesStore", "SQLiteKit"]
        ),

        // Save-rate and search-latency numbers for scripts/bench-store.
        .executableTarget(
            name: "notesfs-bench-store",
            dependencies: ["NotesModel", "NotesStore"]
        ),

        // MARK: Tests
        .target(
            name: "TestSupport",
            dependencies: [
                "NotesModel", "NotesStore", "SQLiteKit", "SyncEngine", "SyncProtocol", "SyncServer", "SyncServerSQLite",
                "ProcessKit",
            ],
            path: "Tests/TestSupport"
        ),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "TestSupport"]),
        .testTarget(name: "NotesModelTests", dependencies: ["NotesModel", "TestSupport", "ProcessKit"]),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "SyncServer", "SyncServerSQLite", "SyncServerPostgres", "SyncProtocol", "HTTPServer", "NotesModel",
                "SQLiteKit", "PostgresKit", "TestSupport", "LoopbackHTTP", "ProcessKit",
            ]
        ),
        .testTarget(
            name: "NotesStoreTests",
            dependencies: ["NotesStore", "NotesModel", "SQLiteKit", "TestSupport", "ProcessKit"]
        ),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: [
                "SyncEngine", "SyncServer", "SyncServerSQLite", "SyncServerPostgres", "SyncProtocol", "HTTPServer",
                "NotesStore", "NotesModel", "SQLiteKit", "PostgresKit", "TestSupport", "ProcessKit",
            ]
        ),
        .testTarget(
            name: "SimulationTests",
            dependencies: ["NotesSimulation", "TestSupport", "ProcessKit"],
            exclude: ["regression-seeds.txt"]
        ),
        // The installed program: install/uninstall into a temporary prefix,
        // man page, completion scripts, systemd units, sd_notify.
        .testTarget(name: "InstallTests", dependencies: ["TestSupport", "ProcessKit"]),
        .testTarget(
            name: "NotesFSTests",
            dependencies: ["NotesFS", "FuseKit", "NotesStore", "NotesModel", "SQLiteKit", "TestSupport"]
        ),
        .testTarget(name: "DocumentationTests"),
    ]
)
