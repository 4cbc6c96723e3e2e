import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small static file server for demos and the bundled samples: GET and HEAD of the files in
/// one folder, `Content-Type` from the file name (so a misnamed file is served under the wrong
/// type, as real hosts do), and `/hang/…` answering nothing for a minute (a slow host).
struct ServeFiles: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve-files",
        abstract: "Serve a folder over HTTP on loopback (demo media host for the samples).")

    @Option(help: "Address to listen on.")
    var bind = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port, printed).")
    var port: UInt16 = 8765

    @Argument(help: "Folder to serve.")
    var folder: String

    func run() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, bind, &address.sin_addr) == 1 else {
            throw ValidationError("--bind '\(bind)' is not an IPv4 address, e.g. 127.0.0.1")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            throw ValidationError("cannot listen on \(bind):\(port): \(String(cString: strerror(errno)))")
        }
        // --port 0 takes a free port; the line says which.
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let listening = UInt16(bigEndian: address.sin_port)
        FileHandle.standardOutput.write(Data("serving \(folder) on http://\(bind):\(listening)/\n".utf8))
        let root = folder
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            Thread.detachNewThread { Self.serve(client, root: root) }
        }
    }

    static func serve(_ fd: Int32, root: String) {
        defer { close(fd) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 16_384, !request.ends(with: [13, 10, 13, 10]) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { return }
            request += buffer[0..<n]
        }
        let line = String(decoding: request.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard line.count >= 2, line[0] == "GET" || line[0] == "HEAD" else {
            return respond(fd, 405, "text/plain", Array("method not allowed\n".utf8), head: false)
        }
        let path = String(line[1].split(separator: "?").first ?? "")
        if path.hasPrefix("/hang/") {
            sleep(60)
            return
        }
        let name = String(path.dropFirst())
        // Regular files in the folder only: a symbolic link (to anywhere) is not served.
        var info = stat()
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), lstat(root + "/" + name, &info) == 0,
            info.st_mode & S_IFMT == S_IFREG, let data = FileManager.default.contents(atPath: root + "/" + name)
        else { return respond(fd, 404, "text/plain", Array("not found\n".utf8), head: line[0] == "HEAD") }
        respond(fd, 200, contentType(name), Array(data), head: line[0] == "HEAD")
    }

    static func respond(_ fd: Int32, _ status: Int, _ type: String, _ body: [UInt8], head: Bool) {
        let reason = [200: "OK", 404: "Not Found", 405: "Method Not Allowed"][status] ?? "Error"
        let header =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n"
            + "Connection: close\r\n\r\n"
        var out = Array(header.utf8)
        if !head { out += body }
        var offset = 0
        while offset < out.count {
            let n = out.withUnsafeBytes { send(fd, $0.baseAddress! + offset, out.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    static func contentType(_ name: String) -> String {
        let types = [
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "aiff": "audio/aiff",
            "aifc": "audio/aiff", "wav": "audio/wav", "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac",
            "mpg": "video/mpeg", "m2v": "video/mpeg", "mp4": "video/mp4", "m4v": "video/x-m4v",
            "avi": "video/x-msvideo",
            "mov": "video/quicktime", "json": "application/json",
        ]
        let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return types[ext] ?? "application/octet-stream"
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
