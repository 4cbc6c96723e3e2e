public import AttacheSeal
public import Crypto
public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the kit opens a sealed payload.
public enum SealKey: Sendable {
    /// A software P-256 key.
    case p256(P256.KeyAgreement.PrivateKey)
    /// An X25519 key.
    case x25519(Curve25519.KeyAgreement.PrivateKey)
    /// A closure that opens the envelope (say, with a Secure Enclave key through CryptoKit's
    /// `HPKE.Recipient`, info ``SealedEnvelope/info``, no additional data) and returns the
    /// plaintext.
    case custom(@Sendable (SealedEnvelope) throws -> [UInt8])

    func open(_ envelope: SealedEnvelope) throws(AttacheClientError) -> [UInt8] {
        do throws(SealError) {
            switch self {
            case .p256(let key): return try PayloadSeal.open(envelope, p256: key)
            case .x25519(let key): return try PayloadSeal.open(envelope, x25519: key)
            case .custom(let open):
                do { return try open(envelope) } catch { throw SealError.sealRejected }
            }
        } catch {
            throw AttacheClientError(error)
        }
    }
}

/// What to show: the content and the files to attach, the exact inputs of
/// `UNMutableNotificationContent` and `UNNotificationAttachment`.
public struct PreparedNotification: Sendable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// The files ready to attach, in the payload's order.
    public var attachments: [PreparedAttachment] = []
    /// What failed, per attachment id (an attachment that failed is simply not attached).
    public var failures: [String: AttacheClientError] = [:]
    /// Why the seal did not open, when it did not (the visible placeholder is then shown).
    public var sealError: AttacheClientError?
    /// True when time ran out with work unfinished and what was ready was returned.
    public var bestAttempt = false
    /// `aps.category`, and that category's actions from the payload (`attache-actions`).
    public var categoryIdentifier: String?
    public var actions: [CategorySet.Action] = []
    /// The payload with the seal's members merged in, as JSON (for the app's own members).
    public var openedPayload: Data?
    /// Delivery receipts to send (when the payload or the kit asks for them).
    public var receipts: [Receipt] = []
}

/// One attachment file, ready for `UNNotificationAttachment(identifier:url:options:)`.
public struct PreparedAttachment: Sendable, Hashable {
    public enum Rendition: String, Sendable {
        case full
        case small
        /// Neither rendition arrived: the entry's ThumbHash drawn as a small PNG (``Placeholder``).
        case placeholder
    }

    public var identifier: String
    public var fileURL: URL
    public var rendition: Rendition
    /// `UNNotificationAttachmentOptionsTypeHintKey`.
    public var typeHint: String
    /// `UNNotificationAttachmentOptionsThumbnailHiddenKey`.
    public var thumbnailHidden: Bool?
    /// `UNNotificationAttachmentOptionsThumbnailClippingRectKey` (x, y, width, height in 0…1).
    public var thumbnailClippingRect: [Double]?
    /// `UNNotificationAttachmentOptionsThumbnailTimeKey`, seconds.
    public var thumbnailTime: Double?
}

/// What happened to one attachment on the device, sent to the service with its own token.
public struct Receipt: Sendable, Hashable {
    public var url: URL
    /// `full`, `small`, `placeholder` or `failed`.
    public var result: String
    public var code: String?
    public var milliseconds: Int

    public var json: Data {
        var text = #"{"result":"\#(result)","ms":\#(milliseconds)"#
        if let code { text += #","code":"\#(code)""# }
        return Data((text + "}").utf8)
    }
}

/// The device-side kit: what a Notification Service Extension runs on a payload Attache made.
///
/// Opens the seal, downloads each attachment (streaming, sized, typed, hashed; sealed ones
/// decrypted segment by segment), and takes the full rendition when time and memory allow,
/// the small one when not, and the text alone when neither arrives — it always hands back
/// content, by the deadline.
public struct AttacheClient: Sendable {
    /// Where attachment files are written (the extension's temporary directory).
    public var directory: URL
    /// How to open sealed payloads (nil: sealed payloads show their placeholder).
    public var key: SealKey?
    /// Bytes the process may still use (on iOS `os_proc_available_memory()`); nil when unknown.
    public var memoryAvailable: @Sendable () -> Int?
    /// The member the attachment block is in.
    public var attachmentsKey = "attachments"
    /// Send delivery receipts even when the payload does not ask (`"attache-receipts": 1`).
    public var receipts = false
    /// Bytes asked for per request (`Range`, whole segments): the most that can wait in
    /// memory when decrypting falls behind the network (default 4 MiB).
    public var window: Int64 = 4 << 20

    public init(
        directory: URL, key: SealKey? = nil,
        memoryAvailable: @escaping @Sendable () -> Int? = AttacheClient.systemMemory
    ) {
        self.directory = directory
        self.key = key
        self.memoryAvailable = memoryAvailable
    }

    /// What the system says is left (iOS), or nil.
    public static let systemMemory: @Sendable () -> Int? = {
        #if os(iOS) || os(watchOS) || os(tvOS) || os(visionOS)
        return Int(os_proc_available_memory())
        #else
        return nil
        #endif
    }

    /// Prepares a notification from its `userInfo`, returning by `deadline`.
    public func prepare(userInfo: [AnyHashable: Any], deadline: ContinuousClock.Instant) async -> PreparedNotification {
        var payload: [String: Any] = [:]
        for (key, value) in userInfo { if let key = key as? String { payload[key] = value } }
        return await prepare(payload, deadline: deadline)
    }

    /// Prepares a notification from the payload's JSON bytes.
    public func prepare(json: Data, deadline: ContinuousClock.Instant) async -> PreparedNotification {
        let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] ?? [:]
        return await prepare(object, deadline: deadline)
    }

    private func prepare(_ visible: [String: Any], deadline: ContinuousClock.Instant) async -> PreparedNotification {
        var result = PreparedNotification()
        var payload = visible
        if let member = visible["encrypted-content"] {
            do throws(AttacheClientError) {
                payload = try open(member, over: visible)
            } catch {
                result.sealError = error
            }
        }
        result.openedPayload = try? JSONSerialization.data(withJSONObject: payload)
        let aps = payload["aps"] as? [String: Any] ?? [:]
        if let alert = aps["alert"] as? String {
            result.body = alert
        } else if let alert = aps["alert"] as? [String: Any] {
            (result.title, result.subtitle, result.body) =
                (alert["title"] as? String, alert["subtitle"] as? String, alert["body"] as? String)
        }
        result.categoryIdentifier = aps["category"] as? String
        if let actions = payload[CategorySet.actionsMember],
            let data = try? JSONSerialization.data(withJSONObject: actions)
        {
            result.actions = (try? JSONDecoder().decode([CategorySet.Action].self, from: data)) ?? []
        }
        let raw = (payload[attachmentsKey] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        let entries = raw.enumerated().map { entry($1, index: $0) }
        let wantsReceipts = receipts || (payload["attache-receipts"] as? NSNumber)?.intValue == 1
        let started = ContinuousClock.now
        let outcomes = await deliverAll(entries, deadline: deadline)
        let elapsed =
            Int((ContinuousClock.now - started).components.seconds * 1000)
            + Int((ContinuousClock.now - started).components.attoseconds / 1_000_000_000_000_000)
        for (index, entry) in raw.enumerated() {
            let id = entry["id"] as? String ?? String(index)
            let url = (entry["url"] as? String).flatMap(URL.init(string:))
            switch outcomes[index] {
            case .success(let attachment)?:
                result.attachments.append(attachment)
                if wantsReceipts, let url {
                    result.receipts.append(
                        Receipt(url: url, result: attachment.rendition.rawValue, milliseconds: elapsed))
                }
            case .failure(let error)?:
                if error == .timedOut { result.bestAttempt = true }
                result.failures[id] = error
                if case .success(let parsed) = entries[index], let drawn = placeholder(parsed) {
                    result.attachments.append(drawn)
                    if wantsReceipts, let url {
                        result.receipts.append(
                            Receipt(url: url, result: "placeholder", code: error.code, milliseconds: elapsed))
                    }
                } else if wantsReceipts, let url {
                    result.receipts.append(Receipt(url: url, result: "failed", code: error.code, milliseconds: elapsed))
                }
            case nil:
                result.bestAttempt = true
                result.failures[id] = .timedOut
                if case .success(let parsed) = entries[index], let drawn = placeholder(parsed) {
                    result.attachments.append(drawn)
                }
            }
        }
        return result
    }

    /// Every attachment at once; at the deadline what is ready is taken and the rest cancelled.
    private func deliverAll(
        _ entries: [Result<Entry, AttacheClientError>], deadline: ContinuousClock.Instant
    ) async -> [Int: Result<PreparedAttachment, AttacheClientError>] {
        await withTaskGroup(
            of: (Int, Result<PreparedAttachment, AttacheClientError>)?.self
        ) { group in
            guard !entries.isEmpty else { return [:] }
            for (index, entry) in entries.enumerated() {
                switch entry {
                case .success(let entry): group.addTask { (index, await self.deliver(entry, deadline: deadline)) }
                case .failure(let error): group.addTask { (index, .failure(error)) }
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            var outcomes: [Int: Result<PreparedAttachment, AttacheClientError>] = [:]
            while let next = await group.next() {
                guard let (index, outcome) = next else {
                    group.cancelAll()
                    continue
                }
                outcomes[index] = outcome
                if outcomes.count == entries.count { group.cancelAll() }
            }
            return outcomes
        }
    }

    /// The visible payload with the seal's members merged over it (`aps` member by member).
    private func open(_ member: Any, over visible: [String: Any]) throws(AttacheClientError) -> [String: Any] {
        let envelope: SealedEnvelope
        do throws(SealError) {
            envelope = try SealedEnvelope(member: member)
        } catch {
            throw AttacheClientError(error)
        }
        guard let key else { throw .noKey }
        let plaintext = try key.open(envelope)
        guard let hidden = (try? JSONSerialization.jsonObject(with: Data(plaintext))) as? [String: Any] else {
            throw .malformedSeal("the sealed content is not a JSON object")
        }
        var payload = visible
        payload["encrypted-content"] = nil
        for (name, value) in hidden {
            if name == "aps", var aps = payload["aps"] as? [String: Any], let inner = value as? [String: Any] {
                for (key, value) in inner { aps[key] = value }
                payload["aps"] = aps
            } else {
                payload[name] = value
            }
        }
        return payload
    }

    /// One attachment entry as the ladder needs it.
    struct Entry: Sendable {
        var prepared: PreparedAttachment
        var full: DownloadRequest
        var small: DownloadRequest?
        var width: Int64?
        var height: Int64?
        /// The entry's ThumbHash, when it carries one.
        var placeholder: [UInt8]? = nil
    }

    /// Reads an entry of the block.
    private func entry(_ entry: [String: Any], index: Int) -> Result<Entry, AttacheClientError> {
        guard let urlText = entry["url"] as? String, let url = URL(string: urlText),
            let type = entry["type"] as? String, let ext = AttachmentTypes.extensions[type]
        else { return .failure(.malformedSeal("an attachment entry has no url or type Attache writes")) }
        let id = (entry["id"] as? String).map { String($0.prefix(64)).filter(\.isHexDigit) } ?? String(index)
        let options = entry["options"] as? [String: Any] ?? [:]
        let prepared = PreparedAttachment(
            identifier: id, fileURL: directory.appendingPathComponent("\(id).\(ext)"), rendition: .full,
            typeHint: type, thumbnailHidden: options["thumbnailHidden"] as? Bool,
            thumbnailClippingRect: (options["thumbnailClippingRect"] as? [String: Any]).flatMap { rect in
                let parts = ["X", "Y", "Width", "Height"].compactMap { (rect[$0] as? NSNumber)?.doubleValue }
                return parts.count == 4 ? parts : nil
            }, thumbnailTime: (options["thumbnailTime"] as? NSNumber)?.doubleValue)
        // An unsealed object's id is the SHA-256 of its bytes; a sealed one names its plaintext's.
        let full = request(
            entry, url: url, type: type, hash: entry["sha256"] as? String ?? (entry["key"] == nil ? id : nil),
            to: prepared.fileURL)
        // A video's small rendition is its poster: a JPEG that says its own type.
        let small = (entry["small"] as? [String: Any]).flatMap { small -> DownloadRequest? in
            guard let text = small["url"] as? String, let url = URL(string: text) else { return nil }
            let smallType = small["type"] as? String ?? type
            guard let smallExt = AttachmentTypes.extensions[smallType] else { return nil }
            let stem = url.deletingPathExtension().lastPathComponent
            return request(
                small, url: url, type: smallType,
                hash: small["sha256"] as? String ?? (small["key"] == nil ? stem : nil),
                to: directory.appendingPathComponent("\(id)-small.\(smallExt)"))
        }
        return .success(
            Entry(
                prepared: prepared, full: full, small: small, width: (entry["width"] as? NSNumber)?.int64Value,
                height: (entry["height"] as? NSNumber)?.int64Value,
                placeholder: (entry["th"] as? String).flatMap(Placeholder.hash(base64:))))
    }

    /// The ladder's last rung before the text alone: the entry's placeholder, drawn here with
    /// no network (a PNG of at most 32 px a side); nil when it has none or it cannot be drawn.
    func placeholder(_ entry: Entry) -> PreparedAttachment? {
        guard let hash = entry.placeholder, let image = Placeholder.decode(hash) else { return nil }
        var prepared = entry.prepared
        prepared.rendition = .placeholder
        prepared.typeHint = "public.png"
        prepared.fileURL = directory.appendingPathComponent("\(prepared.identifier)-placeholder.png")
        prepared.thumbnailTime = nil
        guard (try? Placeholder.png(image).write(to: prepared.fileURL)) != nil else { return nil }
        return prepared
    }

    /// The fallback ladder for one entry: full when memory and time allow, small when not.
    private func deliver(
        _ entry: Entry, deadline: ContinuousClock.Instant
    ) async -> Result<
        PreparedAttachment, AttacheClientError
    > {
        var prepared = entry.prepared
        let (full, small) = (entry.full, entry.small)
        // Memory: the file and, for an image, its decoded pixels must fit twice in what is left.
        var fullFits = true
        if let available = memoryAvailable() {
            var need = full.bytes ?? full.cap
            if AttachmentTypes.isImage(full.type) { need += (entry.width ?? 4096) * (entry.height ?? 4096) * 4 }
            fullFits = need * 2 <= Int64(available)
        }
        guard fullFits else {
            guard let small else { return .failure(.notEnoughMemory) }
            prepared.rendition = .small
            prepared.fileURL = small.destination
            prepared.typeHint = small.type
            return await Self.fetch(small, deadline: deadline).map { prepared }
        }
        guard let small else { return await Self.fetch(full, deadline: deadline).map { prepared } }
        // Both at once: the small one is a few tens of KB and is there if the full one is late.
        async let smallDone = Self.fetch(small, deadline: deadline)
        let fullDone = await Self.fetch(full, deadline: deadline)
        if case .success = fullDone {
            if case .success = await smallDone { try? FileManager.default.removeItem(at: small.destination) }
            return .success(prepared)
        }
        switch await smallDone {
        case .success:
            prepared.rendition = .small
            prepared.fileURL = small.destination
            prepared.typeHint = small.type
            return .success(prepared)
        case .failure:
            return fullDone.map { prepared }
        }
    }

    private func request(
        _ entry: [String: Any], url: URL, type: String, hash: String?, to destination: URL
    )
        -> DownloadRequest
    {
        let key = (entry["key"] as? String).flatMap(Base64.decode).flatMap { $0.count == 32 ? $0 : nil }
        return DownloadRequest(
            url: url, bytes: (entry["bytes"] as? NSNumber)?.int64Value, sha256: hash, key: key, type: type,
            cap: AttachmentTypes.cap(type: type), window: max(64 << 10, window), destination: destination)
    }

    private static func fetch(
        _ request: DownloadRequest, deadline: ContinuousClock.Instant
    ) async -> Result<Void, AttacheClientError> {
        if Task.isCancelled || ContinuousClock.now >= deadline { return .failure(.timedOut) }
        do throws(AttacheClientError) {
            try await Download(request, deadline: deadline).run()
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// Sends the receipts (a `POST` of `{"result", "code", "ms"}` to each attachment's own
    /// URL); returns how many the service took.
    @discardableResult
    public func send(_ receipts: [Receipt]) async -> Int {
        var sent = 0
        for receipt in receipts {
            var request = URLRequest(url: receipt.url)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = receipt.json
            request.timeoutInterval = 5
            if let (_, response) = try? await URLSession.shared.data(for: request),
                (response as? HTTPURLResponse)?.statusCode == 204
            {
                sent += 1
            }
        }
        return sent
    }
}

extension AttacheClient {
    /// The category set from the file the server is configured with (bundled with the app),
    /// for the app to register at launch: `UNNotificationCategory` per `categories` entry, each
    /// action a `UNNotificationAction(identifier: id, title: title, options: …)`.
    public static func categorySet(json: Data) throws -> CategorySet {
        try CategorySet(json: json)
    }
}
