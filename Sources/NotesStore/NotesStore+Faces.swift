extension NotesStore {
    /// The file-system face, for the mount (`NotesFS`).
    public var tree: NotesTree { NotesTree(self) }

    /// The sync face, for the engine (`SyncEngine`).
    public var replica: SyncReplica { SyncReplica(self) }

    /// The face for the command's own work: status, search, restore, settings.
    public var admin: StoreAdmin { StoreAdmin(self) }
}
