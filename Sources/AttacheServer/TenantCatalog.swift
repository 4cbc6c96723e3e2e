public import AttacheBase
public import AttacheStore
import Foundation

/// The tenants a shared store keeps in its catalog for its replicas (`attache serve --tenants
/// catalog`), written and read from the command line (`attache store tenants push|show`).
public enum TenantCatalog {
    /// Reads `file` whole, as the service reads a tenants file, and replaces the catalog's
    /// tenants with its rows in one transaction; the tenants written and the new version. A
    /// file with a problem is refused with each problem's line and nothing is written.
    public static func push(
        _ file: String, to store: AttachmentStore
    ) throws(AttacheError) -> (
        tenants: Int, version: Int64
    ) {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw AttacheError(.ioError, "cannot read \(file)")
        }
        let bytes = Array(data)
        switch TenantTable.parse(bytes, name: file) {
        case .success(let table):
            let version = try store.replaceCatalogTenants(TenantTable.rows(bytes))
            return (table.tenants.count, version)
        case .failure(let error):
            throw AttacheError(.invalidInput, error.problems.joined(separator: "\n"))
        }
    }

    /// The catalog's tenants as a tenants file (a row a line), and their version.
    public static func file(_ store: AttachmentStore) throws(AttacheError) -> (text: String, version: Int64) {
        guard let found = try store.catalogTenants() else {
            throw AttacheError(.invalidInput, "a directory store keeps no tenants for replicas")
        }
        return (String(decoding: TenantTable.document(found.rows), as: UTF8.self), found.version)
    }
}
