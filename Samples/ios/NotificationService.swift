// A Notification Service Extension using AttacheClient: documentation, not built here (it
// needs UserNotifications and an app target). Add the Attache package to the extension target
// and link the AttacheClient product.
//
// The server seals payloads to this device's key (`Attache-Seal-Key` / `attache-seal`) and
// writes the attachment block; this extension opens the seal, downloads each attachment
// (decrypting sealed ones segment by segment), falls back to the small rendition when memory
// or time is short, and always hands back content: when the system says time is up,
// `serviceExtensionTimeWillExpire` delivers what is ready.

import AttacheClient
import AttacheSeal
import CryptoKit
import Foundation
import UserNotifications
import os

final class NotificationService: UNNotificationServiceExtension {
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var bestAttempt: UNMutableNotificationContent?
    private var work: Task<Void, Never>?
    private let delivered = OSAllocatedUnfairLock(initialState: false)

    override func didReceive(
        _ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        self.contentHandler = contentHandler
        let content = request.content.mutableCopy() as! UNMutableNotificationContent
        bestAttempt = content

        // The device key: a Secure Enclave P-256 key the app made and registered with the
        // backend (its public key is what the server seals to). The closure opens the seal
        // with it; the info binds the suite and key id (see docs/sealed-attachments.md).
        let key = SealKey.custom { envelope in
            let privateKey = try DeviceKey.load()
            var recipient = try HPKE.Recipient(
                privateKey: privateKey, ciphersuite: .P256_SHA256_AES_GCM_256, info: envelope.info,
                encapsulatedKey: Data(envelope.encapsulatedKey))
            return Array(try recipient.open(envelope.ciphertext))
        }
        let client = AttacheClient(
            directory: FileManager.default.temporaryDirectory.appendingPathComponent(request.identifier), key: key)
        try? FileManager.default.createDirectory(at: client.directory, withIntermediateDirectories: true)

        work = Task {
            // About 30 s are allowed; keep a margin for building the content.
            let prepared = await client.prepare(userInfo: request.content.userInfo, deadline: .now + .seconds(25))
            if let title = prepared.title { content.title = title }
            if let subtitle = prepared.subtitle { content.subtitle = subtitle }
            if let body = prepared.body { content.body = body }
            if let category = prepared.categoryIdentifier { content.categoryIdentifier = category }
            // Each file is the full rendition, the small one, or the placeholder (the entry's
            // ThumbHash drawn here as a PNG, no network) when neither arrived in time.
            content.attachments = prepared.attachments.compactMap { file in
                var options: [AnyHashable: Any] = [UNNotificationAttachmentOptionsTypeHintKey: file.typeHint]
                if let hidden = file.thumbnailHidden { options[UNNotificationAttachmentOptionsThumbnailHiddenKey] = hidden }
                if let rect = file.thumbnailClippingRect {
                    options[UNNotificationAttachmentOptionsThumbnailClippingRectKey] =
                        CGRect(x: rect[0], y: rect[1], width: rect[2], height: rect[3]).dictionaryRepresentation
                }
                if let time = file.thumbnailTime { options[UNNotificationAttachmentOptionsThumbnailTimeKey] = time }
                return try? UNNotificationAttachment(identifier: file.identifier, url: file.fileURL, options: options)
            }
            deliver(content)
            // Receipts, when the payload asked for them: what this device showed, per attachment.
            if !prepared.receipts.isEmpty { await client.send(prepared.receipts) }
        }
    }

    override func serviceExtensionTimeWillExpire() {
        // The kit returns by its deadline; if the system ends first, deliver what there is
        // (the opened text if it got that far, or the placeholder the server wrote).
        work?.cancel()
        if let bestAttempt { deliver(bestAttempt) }
    }

    private func deliver(_ content: UNNotificationContent) {
        let first = delivered.withLock { done in
            defer { done = true }
            return !done
        }
        if first { contentHandler?(content) }
    }
}

/// At the app's launch: register every category the server may set (from the same JSON file
/// as `attache serve --categories`), or an extension's category shows no actions.
enum Categories {
    static func register(file: URL) throws {
        let set = try AttacheClient.categorySet(json: try Data(contentsOf: file))
        let categories = set.categories.map { category in
            UNNotificationCategory(
                identifier: category.id,
                actions: category.actions.map { action in
                    var options: UNNotificationActionOptions = []
                    if action.options?.contains("foreground") == true { options.insert(.foreground) }
                    if action.options?.contains("destructive") == true { options.insert(.destructive) }
                    if action.options?.contains("authenticationRequired") == true {
                        options.insert(.authenticationRequired)
                    }
                    return UNNotificationAction(identifier: action.id, title: action.title, options: options)
                }, intentIdentifiers: [])
        }
        UNUserNotificationCenter.current().setNotificationCategories(Set(categories))
    }
}

/// Where the app keeps its Secure Enclave key (its data representation in the shared keychain
/// group of the app and the extension).
enum DeviceKey {
    static func load() throws -> SecureEnclave.P256.KeyAgreement.PrivateKey {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "attache.device-key",
            kSecReturnData as String: true,
        ]
        var item: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess, let data = item as? Data else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try SecureEnclave.P256.KeyAgreement.PrivateKey(dataRepresentation: data)
    }
}
