import AttacheBase
import AttacheStore

/// The tenants kept in the catalog for every replica: their rows in order (`attache_tenant`)
/// and one version (`attache_tenant_rows`) raised by each change, which a replica compares
/// every second (one small query) before it reads the rows again.
extension SharedBackend {
    func catalogTenantsVersion() throws(AttacheError) -> Int64? {
        guard let text = try pool.query("SELECT version FROM attache_tenant_rows WHERE one = 1").first?[0],
            let version = Int64(text)
        else { throw AttacheError(.storeCorrupt, "catalog: the tenants' version row is missing") }
        return version
    }

    func catalogTenants() throws(AttacheError) -> CatalogTenants? {
        // The version and the rows in one statement, so one snapshot: a change cannot pair one
        // version with another's rows.
        let found = try pool.query(
            """
            SELECT v.version, t.row FROM attache_tenant_rows v LEFT JOIN attache_tenant t ON true
            WHERE v.one = 1 ORDER BY t.position
            """
        ).rows
        guard let text = found.first?[0], let version = Int64(text) else {
            throw AttacheError(.storeCorrupt, "catalog: the tenants' version row is missing")
        }
        return CatalogTenants(version: version, rows: found.compactMap { $0[1] })
    }

    func replaceCatalogTenants(_ rows: [String]) throws(AttacheError) -> Int64 {
        try pool.transaction { (connection) throws(AttacheError) -> Int64 in
            guard
                let text = try connection.query("SELECT version FROM attache_tenant_rows WHERE one = 1 FOR UPDATE")
                    .first?[0], let version = Int64(text)
            else { throw AttacheError(.storeCorrupt, "catalog: the tenants' version row is missing") }
            try connection.query("DELETE FROM attache_tenant")
            for (position, row) in rows.enumerated() {
                try connection.query("INSERT INTO attache_tenant VALUES ($1, $2)", [String(position), row])
            }
            try connection.query("UPDATE attache_tenant_rows SET version = $1 WHERE one = 1", [String(version + 1)])
            return version + 1
        }
    }
}
