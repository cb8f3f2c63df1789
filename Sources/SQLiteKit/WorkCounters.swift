/// Work a connection did: statements run, rows returned, SQLite virtual
/// machine steps (which grow with the rows a statement visits, returned or
/// not) and pages read from the page cache or the file.
public struct WorkCounters: Sendable, Equatable {
    public var statements: Int64 = 0
    public var rows: Int64 = 0
    public var virtualMachineSteps: Int64 = 0
    public var pages: Int64 = 0
    /// Pages written out (to the write-ahead log in WAL mode): what a change cost on disk.
    public var pagesWritten: Int64 = 0

    public init() {}

    /// The work done between `earlier` and this count.
    public func since(_ earlier: WorkCounters) -> WorkCounters {
        var difference = WorkCounters()
        difference.statements = statements - earlier.statements
        difference.rows = rows - earlier.rows
        difference.virtualMachineSteps = virtualMachineSteps - earlier.virtualMachineSteps
        difference.pages = pages - earlier.pages
        difference.pagesWritten = pagesWritten - earlier.pagesWritten
        return difference
    }
}
