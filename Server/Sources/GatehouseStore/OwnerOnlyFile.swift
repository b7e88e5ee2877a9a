import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files that hold secrets (the SQLite database, its WAL and shared-memory files, backups) are
/// readable and writable by their owner only, 0600 (finding 6 of issue 40: the database and
/// every backup were 0644, and a backup made without `GATEHOUSE_SECRET_KEY` carries the signing
/// key unsealed). SQLite gives the WAL and `-shm` files the database file's mode.
public enum OwnerOnlyFile {
    public static let mode: mode_t = 0o600

    /// Creates `path` empty with mode 0600; fails if it exists.
    public static func create(_ path: String) throws(StoreError) {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .unavailable("cannot create \(path): \(String(cString: strerror(errno)))") }
        close(fd)
    }

    /// The database file at `path` (created if missing) and its `-wal` and `-shm` files, when
    /// they exist, made 0600.
    public static func restrictDatabase(_ path: String) throws(StoreError) {
        if !FileManager.default.fileExists(atPath: path) { try create(path) }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            guard chmod(file, mode) == 0 else { throw .unavailable("cannot make \(file) 0600: \(String(cString: strerror(errno)))") }
        }
    }

    /// The permission bits of `path` (e.g. 0o600), or nil when it cannot be read.
    public static func permissions(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }
}
