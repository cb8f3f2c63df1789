/// The paths and query parameters of the sync protocol (DESIGN.md "The sync protocol").
///
/// Every route but `healthz` and `metrics` needs `Authorization: Bearer <token>`.
public enum Endpoint {
    /// `POST` a `PushRequest`; the reply is a `PushResponse`.
    public static let push = "/v1/push"
    /// `GET ?since=<cursor>&limit=<rows>&wait=<seconds>`; the reply is a `ChangesPage`.
    public static let changes = "/v1/changes"
    /// `GET ?after=<token>&limit=<rows>`; the reply is an `IndexPage`.
    public static let index = "/v1/index"
    /// `POST` a `FetchRequest`; the reply is a `FetchResponse`.
    public static let fetch = "/v1/fetch"
    /// `GET ?entity=<kind:id>&before=<version>&limit=<rows>`; the reply is a `VersionsPage`.
    public static let historyVersions = "/v1/history/versions"
    /// `GET ?entity=<kind:id>&version=<version>`; the reply is a `VersionResponse`.
    public static let historyVersion = "/v1/history/version"
    /// `GET ?at=<RFC 3339 time>&after=<token>&limit=<rows>`; the reply is a `TreePage`,
    /// or with `bodies=false` a `TreeSummaryPage`.
    public static let historyTree = "/v1/history/tree"
    /// `GET`, no token: `{"status":"ok"}` while the server can serve.
    public static let healthz = "/healthz"
    /// `GET`, no token: Prometheus text format 0.0.4.
    public static let metrics = "/metrics"

    /// Query parameter names.
    public enum Query {
        /// The cursor of `/v1/changes`; absent means "from the beginning".
        public static let since = "since"
        /// Rows per page, for `/v1/changes` and `/v1/index`.
        public static let limit = "limit"
        /// Seconds to hold an empty `/v1/changes` answer open (long poll).
        public static let wait = "wait"
        /// The polling device's id on a `/v1/changes` long poll: the server
        /// does not wake it for that device's own pushes.
        public static let device = "device"
        /// The `nextAfter` token of the previous `/v1/index` or `/v1/history/tree` page.
        public static let after = "after"
        /// The note or folder of a history request: `note:<id>` or `folder:<id>`.
        public static let entity = "entity"
        /// The `nextBefore` of the previous `/v1/history/versions` page.
        public static let before = "before"
        /// The version `/v1/history/version` answers with.
        public static let version = "version"
        /// The time `/v1/history/tree` shows the tree at (RFC 3339).
        public static let at = "at"
        /// `false` asks `/v1/history/tree` for the tree without the notes' text
        /// (`TreeSummaryPage`); `true`, the default, with it (`TreePage`).
        public static let bodies = "bodies"
    }
}
