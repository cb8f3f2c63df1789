import Foundation

/// What the binding asks of the kernel and answers by itself, as the file
/// system chooses; the binding holds no knowledge of its own about either.
public struct FuseSettings: Sendable {
    /// Asks the kernel to open files without open and release requests when
    /// it can (`FUSE_CAP_NO_OPEN_SUPPORT`): handle 0, pages kept between opens.
    public var skipsFileOpens: Bool
    /// Extended-attribute names answered in the binding, before any Swift
    /// string is made (`ExtendedAttributeFilter`).
    public var attributeFilter: ExtendedAttributeFilter

    public init(skipsFileOpens: Bool, attributeFilter: ExtendedAttributeFilter) {
        self.skipsFileOpens = skipsFileOpens
        self.attributeFilter = attributeFilter
    }
}

/// Answers `getxattr` for names the file system keeps nothing under, without
/// asking it: the kernel asks for `security.capability` before the first
/// write of each file, and `ls -l` for `security.selinux` and
/// `system.posix_acl_access` per file.
///
/// Namespaces other than `user.` are not supported at all (EOPNOTSUPP): `ls`
/// then remembers, per device, that there are no ACLs or SELinux labels and
/// stops asking — a round trip per file and attribute that the kernel never
/// caches for FUSE. A missing `user.` name is ENODATA: that namespace is supported.
public struct ExtendedAttributeFilter: Sendable {
    /// NUL-terminated: compared with the kernel's name by `strncmp`.
    private let keptPrefix: [CChar]
    private static let userNamespace: [CChar] = Array("user.".utf8CString)

    /// `keptPrefix` starts every name the file system keeps a value under.
    public init(keptPrefix: String) {
        self.keptPrefix = Array(keptPrefix.utf8CString)
    }

    /// The errno for `name` when the binding answers it alone; nil when the
    /// file system must be asked.
    public func answer(forName name: UnsafePointer<CChar>) -> Int32? {
        if Self.hasPrefix(name, keptPrefix) { return nil }
        return Self.hasPrefix(name, Self.userNamespace) ? ENODATA : EOPNOTSUPP
    }

    /// The same answer for a Swift string (for callers without a kernel).
    public func answer(forName name: String) -> Int32? {
        name.withCString { answer(forName: $0) }
    }

    private static func hasPrefix(_ name: UnsafePointer<CChar>, _ prefix: [CChar]) -> Bool {
        prefix.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return true }
            return strncmp(name, base, bytes.count - 1) == 0
        }
    }
}
