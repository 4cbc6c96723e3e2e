public import Foundation

/// Categories by kind: which `aps.category` a payload gets from what was attached, and the
/// actions of each category. One file (JSON) configures the server and is bundled with the app,
/// which registers ``categories`` at launch (a category set from an extension shows its actions
/// only if the app registered it beforehand):
///
/// ```json
/// {"image": "attache.image", "video": "attache.video", "audio": "attache.audio",
///  "none": "attache.text", "override": false,
///  "actions": {"attache.image": [{"id": "open", "title": "Open", "options": ["foreground"]}]}}
/// ```
public struct CategorySet: Codable, Hashable, Sendable {
    /// One action of a category (`UNNotificationAction`: identifier, title, options).
    public struct Action: Codable, Hashable, Sendable {
        public var id: String
        public var title: String
        /// Any of `foreground`, `destructive`, `authenticationRequired`.
        public var options: [String]?

        public init(id: String, title: String, options: [String]? = nil) {
            self.id = id
            self.title = title
            self.options = options
        }

        /// The action as payload JSON text.
        public var jsonText: String {
            var text = #"{"id":\#(quote(id)),"title":\#(quote(title))"#
            if let options, !options.isEmpty { text += #","options":[\#(options.map(quote).joined(separator: ","))]"# }
            return text + "}"
        }
    }

    /// The category for a payload whose first attachment is an image, a video, an audio file.
    public var image: String?
    public var video: String?
    public var audio: String?
    /// The category when nothing was attached.
    public var none: String?
    /// Replace a category the sender set (default: keep it).
    public var override: Bool?
    /// Actions per category id.
    public var actions: [String: [Action]]?

    public init(
        image: String? = nil, video: String? = nil, audio: String? = nil, none: String? = nil,
        override: Bool? = nil, actions: [String: [Action]]? = nil
    ) {
        self.image = image
        self.video = video
        self.audio = audio
        self.none = none
        self.override = override
        self.actions = actions
    }

    /// The valid action options.
    public static let actionOptions: Set<String> = ["foreground", "destructive", "authenticationRequired"]

    /// The member of the payload that carries the actions of the category set.
    public static let actionsMember = "attache-actions"

    /// The category for the first attachment's kind category (`image`, `video`, `audio`), or
    /// for nothing attached (`nil`).
    public func category(for kind: String?) -> String? {
        switch kind {
        case "image": image
        case "video": video
        case "audio": audio
        default: none
        }
    }

    /// Every category named, each once, with its actions: what the app registers at launch.
    public var categories: [(id: String, actions: [Action])] {
        var seen = Set<String>()
        var all: [(String, [Action])] = []
        for id in [image, video, audio, none].compactMap({ $0 }) + (actions ?? [:]).keys.sorted()
        where seen.insert(id).inserted {
            all.append((id, actions?[id] ?? []))
        }
        return all
    }

    /// Why a file is not a usable category set.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads a category set from its JSON file and checks it: the one reader for the CLI, the
    /// service and the app.
    public init(json: Data) throws(Invalid) {
        do {
            self = try JSONDecoder().decode(CategorySet.self, from: json)
        } catch let error as DecodingError {
            throw Invalid(description: "not a category set: " + Self.words(error))
        } catch {
            throw Invalid(description: "not a category set")
        }
        if let problem { throw Invalid(description: problem) }
    }

    /// A decoding error in words: where in the file, and what was expected there.
    static func words(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the file" : keys.joined(separator: ".")
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "the file is not valid JSON" : "\(path(context)) is not valid: \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\(context.codingPath.isEmpty ? "the object" : path(context)) has no \(key.stringValue)"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let name = String(describing: type)
            let expected =
                name == "String"
                ? "a string"
                : name == "Bool"
                    ? "true or false"
                    : name.hasPrefix("Array")
                        ? "a list"
                        : name.hasPrefix("Dictionary")
                            ? "an object"
                            : ["Int", "Double"].contains(name) ? "a number" : "an object"
            return "\(path(context)) should be \(expected)"
        @unknown default:
            return "its shape is not the documented one"
        }
    }

    /// Why the set cannot be used, or nil.
    public var problem: String? {
        for id in [image, video, audio, none].compactMap({ $0 }) where id.isEmpty || id.utf8.count > 64 {
            return "a category id is 1–64 bytes"
        }
        for (id, list) in actions ?? [:] {
            if list.count > 10 { return "category \(id) has more than 10 actions" }
            for action in list {
                if action.id.isEmpty || action.title.isEmpty { return "an action of \(id) has no id or title" }
                if let bad = action.options?.first(where: { !Self.actionOptions.contains($0) }) {
                    return "action \(action.id) has an unknown option \(bad)"
                }
            }
        }
        return nil
    }
}

/// JSON string literals, as the payload writes them.
public enum JSONString {
    /// `string` as a JSON string literal: `"` and `\` escaped, control characters and the
    /// two line separators as escapes, everything else as it is.
    public static func quote(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

func quote(_ string: String) -> String { JSONString.quote(string) }
