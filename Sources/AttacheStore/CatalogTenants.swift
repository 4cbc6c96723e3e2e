public import AttacheBase

/// The tenants a shared store keeps in its catalog for every replica to read (`attache serve
/// --tenants catalog`): each tenant's row as the tenants file writes it (one JSON object), in
/// order, and the version the catalog gives them (raised by every change).
public struct CatalogTenants: Sendable, Hashable {
    public var version: Int64
    /// Each row's JSON text.
    public var rows: [String]

    package init(version: Int64, rows: [String]) {
        (self.version, self.rows) = (version, rows)
    }
}

extension StoreBackend {
    /// The tenants in the catalog; nil for a store without a catalog that replicas share.
    package func catalogTenants() throws(AttacheError) -> CatalogTenants? { nil }
    /// Their version alone (one small query); nil likewise.
    package func catalogTenantsVersion() throws(AttacheError) -> Int64? { nil }
    /// Replaces them with `rows` (checked whole by the caller), serialised with every other
    /// change; the new version.
    package func replaceCatalogTenants(_ rows: [String]) throws(AttacheError) -> Int64 {
        throw AttacheError(
            .invalidInput, "a directory store keeps no tenants for replicas: give the service --tenants FILE")
    }
}

extension AttachmentStore {
    /// The tenants kept in the catalog (nil: a directory store, which keeps none).
    public func catalogTenants() throws(AttacheError) -> CatalogTenants? { try backend.catalogTenants() }

    /// The catalog's version of its tenants, looked at alone (nil: a directory store).
    public func catalogTenantsVersion() throws(AttacheError) -> Int64? { try backend.catalogTenantsVersion() }

    /// Replaces the catalog's tenants with `rows`, each a tenant's JSON object, whole; the new
    /// version. Every replica reading `--tenants catalog` takes them within its next look.
    public func replaceCatalogTenants(_ rows: [String]) throws(AttacheError) -> Int64 {
        try backend.replaceCatalogTenants(rows)
    }
}
