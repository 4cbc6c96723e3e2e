import AttacheBase
import AttacheStore
import Crypto
import ExtrasBase64
import Synchronization

/// The key ring, sealed in the catalog and read again every interval.
extension SharedBackend {
    func keyRing(within interval: Duration) -> KeyRing {
        let (ring, due) = keys.withLock { state in (state.ring, state.due(interval)) }
        guard due else { return ring }
        // Another process may have rotated: compare versions (one small query), read on change.
        guard let found = try? pool.query("SELECT version FROM attache_keyring WHERE one = 1").first,
            let text = found[0], let number = Int64(text)
        else { return ring }
        if number == keys.withLock({ $0.version }) { return ring }
        guard
            let (loaded, seen) = try? pool.with({ (connection) throws(AttacheError) in
                try Self.loadOrCreateKeyRing(connection, sealer: keys.withLock { $0.sealer })
            })
        else { return ring }
        return keys.withLock { state in
            if seen > state.version { (state.ring, state.version) = (loaded, seen) }
            return state.ring
        }
    }

    func updateKeys(_ change: (KeyRing) throws(AttacheError) -> KeyRing) throws(AttacheError) -> KeyRing {
        let sealer = keys.withLock { $0.sealer }
        let (updated, version) = try pool.transaction { (connection) throws(AttacheError) -> (KeyRing, Int64) in
            let rows = try connection.query("SELECT version, sealed FROM attache_keyring WHERE one = 1 FOR UPDATE")
            guard let values = rows.first, let version = Int64(values[0] ?? ""), let sealed = values[1] else {
                throw AttacheError(.storeCorrupt, "catalog: the key ring row is missing")
            }
            let updated = try change(try sealer.open(sealed))
            try connection.query(
                "UPDATE attache_keyring SET version = $1, sealed = $2 WHERE one = 1",
                [String(version + 1), try sealer.seal(updated)])
            return (updated, version + 1)
        }
        keys.withLock { state in
            if version > state.version { (state.ring, state.version) = (updated, version) }
        }
        return updated
    }

    static func loadOrCreateKeyRing(
        _ connection: PostgresConnection, sealer: KeyRingSealer
    ) throws(AttacheError) -> (KeyRing, Int64) {
        let select = "SELECT version, sealed FROM attache_keyring WHERE one = 1"
        if try connection.query(select).rows.isEmpty {
            try connection.query(
                "INSERT INTO attache_keyring VALUES (1, 1, $1) ON CONFLICT DO NOTHING", [try sealer.seal(.generate())])
        }
        guard let values = try connection.query(select).first, let version = Int64(values[0] ?? ""),
            let sealed = values[1]
        else { throw AttacheError(.storeCorrupt, "catalog: the key ring row is missing") }
        return (try sealer.open(sealed), version)
    }
}

/// The key ring as this process last read it from the catalog.
struct SharedKeyRing {
    var ring: KeyRing
    var version: Int64
    let sealer: KeyRingSealer
    private var checked = ContinuousClock.now
    /// When the catalog's version was last compared: the ring is as of then.
    var lastLook: ContinuousClock.Instant { checked }

    init(ring: KeyRing, version: Int64, sealer: KeyRingSealer) {
        self.ring = ring
        self.version = version
        self.sealer = sealer
    }

    /// Whether the last look is older than `interval` (and, if so, counts this one as a look).
    mutating func due(_ interval: Duration) -> Bool {
        let now = ContinuousClock.now
        guard now - checked >= interval else { return false }
        checked = now
        return true
    }
}

/// Encrypts the key ring for the catalog: AES-256-GCM under the key from the environment,
/// bound to what it is; base64 of nonce, ciphertext and tag.
struct KeyRingSealer: Sendable {
    private let key: SymmetricKey
    private static let context = Array("attache key ring v1".utf8)

    init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    func seal(_ ring: KeyRing) throws(AttacheError) -> String {
        guard let box = try? AES.GCM.seal(try ring.encoded(), using: key, authenticating: Self.context),
            let combined = box.combined
        else { throw AttacheError(.internalError, "cannot encrypt the key ring") }
        return Base64.encodeToString(bytes: combined)
    }

    func open(_ text: String) throws(AttacheError) -> KeyRing {
        guard let bytes = try? Base64.decode(string: text), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.context)
        else {
            throw AttacheError(
                .storeCorrupt,
                "the shared key ring does not open with this ATTACHE_KEYRING_KEY (another key, or damaged)")
        }
        return try KeyRing.decode(Array(plain), from: "the shared key ring")
    }
}
