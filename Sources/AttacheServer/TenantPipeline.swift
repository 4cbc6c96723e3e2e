public import AttacheBase
public import AttacheCore
public import AttacheFetch
public import AttacheStore

/// A tenant's pipeline outside the service (`attache batch --tenant ID [--tenants FILE]`): the
/// same row of the same tenants file the service reads, applied the same way, so a campaign
/// prepared for a customer is held to that customer's settings, media hosts and store quota,
/// and what it stores counts as that customer's.
public enum TenantPipeline {
    /// `configuration` as tenant `id` gets it, and the hosts it may fetch from (nil: the
    /// policy's). Without `file`, the tenant owns what it stores and has no settings, hosts or
    /// quota of its own. A `file` of `catalog` reads the tenants `store` keeps for its replicas
    /// (without `store`, it is only checked later).
    public static func configuration(
        for id: String, file: String?, store: AttachmentStore? = nil, over configuration: PipelineConfiguration
    ) throws(AttacheError) -> (PipelineConfiguration, SourceRules?) {
        guard StoreOwner.isValidID(id) else {
            throw AttacheError(
                .invalidInput, "--tenant '\(id)' is not a tenant id (1-64 of a-z 0-9 . _ -, from a letter or digit)")
        }
        guard let file else {
            var configuration = configuration
            configuration.storeOwner = StoreOwner(id: id)
            return (configuration, nil)
        }
        let origin: TenantOrigin
        if file == TenantOrigin.catalogName {
            guard let store else { return (configuration, nil) }
            origin = .catalog(store)
        } else {
            origin = .file(file)
        }
        let table: TenantTable
        switch origin.read() {
        case .success(let read): table = read
        case .failure(let error):
            throw AttacheError(.invalidInput, "--tenants \(file): " + error.problems.joined(separator: "; "))
        }
        guard let tenant = table.tenants.first(where: { $0.id == id }) else {
            let known = table.tenants.map(\.id).joined(separator: ", ")
            throw AttacheError(.invalidInput, "--tenant '\(id)' is not a tenant of \(file) (it has: \(known))")
        }
        return (tenant.applied(to: configuration), tenant.sources)
    }
}
