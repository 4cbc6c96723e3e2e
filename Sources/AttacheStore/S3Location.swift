public import AttacheBase
import Foundation

/// Where the shared store keeps object bytes: a bucket (and key prefix) on an S3-compatible
/// server, with the credentials that sign every request (SigV4, path-style URLs).
public struct S3Location: Sendable, Hashable {
    /// `http(s)://host[:port]` of the S3 API.
    public var endpoint: String
    /// The bucket.
    public var bucket: String
    /// A key prefix inside the bucket ("" or ending in "/").
    public var prefix: String
    /// The signing region.
    public var region: String
    /// The access key id.
    public var accessKey: String
    /// The secret key.
    public var secretKey: String

    /// Creates a location.
    public init(
        endpoint: String, bucket: String, prefix: String = "", region: String, accessKey: String, secretKey: String
    ) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.bucket = bucket
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        self.region = region
        self.accessKey = accessKey
        self.secretKey = secretKey
    }

    /// Reads `s3://bucket[/prefix]` and the rest from the environment: `ATTACHE_S3_ENDPOINT`
    /// (or `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`), `AWS_REGION` (or `AWS_DEFAULT_REGION`,
    /// default `us-east-1`), `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`. Every missing or
    /// malformed part is named in one error.
    public static func parse(_ url: String, environment: [String: String]) throws(AttacheError) -> S3Location {
        var problems: [String] = []
        var bucket = ""
        var prefix = ""
        if url.hasPrefix("s3://") {
            let rest = url.dropFirst(5)
            let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            bucket = String(parts[0])
            prefix = parts.count > 1 ? String(parts[1]) : ""
            if !Self.isBucketName(bucket) {
                problems.append("'\(bucket)' is not a bucket name (3-63 of a-z 0-9 . -)")
            }
        } else {
            problems.append("--blobs must be s3://bucket[/prefix], not '\(url)'")
        }
        let endpoint =
            environment["ATTACHE_S3_ENDPOINT"] ?? environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"]
        if let endpoint {
            if !(endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")) {
                problems.append("the S3 endpoint must be an http(s) URL, not '\(endpoint)'")
            }
        } else {
            problems.append("ATTACHE_S3_ENDPOINT (the S3 API's http(s)://host:port) is not set")
        }
        let access = environment["AWS_ACCESS_KEY_ID"] ?? ""
        let secret = environment["AWS_SECRET_ACCESS_KEY"] ?? ""
        if access.isEmpty { problems.append("AWS_ACCESS_KEY_ID is not set") }
        if secret.isEmpty { problems.append("AWS_SECRET_ACCESS_KEY is not set") }
        if access.contains(":") { problems.append("AWS_ACCESS_KEY_ID must not hold ':'") }
        guard problems.isEmpty, let endpoint else {
            throw AttacheError(.invalidInput, "blob store: " + problems.joined(separator: "; "))
        }
        let region = environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
        return S3Location(
            endpoint: endpoint, bucket: bucket, prefix: prefix, region: region, accessKey: access, secretKey: secret)
    }

    static func isBucketName(_ name: String) -> Bool {
        (3...63).contains(name.utf8.count)
            && name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 }
    }

    /// How the location is written in logs and reports (no credentials).
    public var description: String { "s3://\(bucket)/\(prefix) at \(endpoint)" }
}
