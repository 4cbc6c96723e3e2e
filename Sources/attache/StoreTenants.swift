import ArgumentParser
import AttacheServer
import Foundation

extension StoreCommand {
    struct Tenants: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Keep the tenants in a shared store's catalog, for every replica (serve --tenants catalog).",
            subcommands: [Push.self, Show.self]
        )

        struct Push: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Replace the catalog's tenants with a tenants file's, whole.",
                discussion: """
                    The file is read as the service reads a tenants file; one with a problem is refused with \
                    each problem's line, and the catalog keeps what it has. Every replica serving with \
                    --tenants catalog takes the new tenants within a second (or at SIGHUP).
                    """
            )

            @OptionGroup var options: StoreOptions

            @Argument(help: "The tenants file (docs/tenants.md).")
            var file: String

            func run() throws {
                let (tenants, version) = try TenantCatalog.push(file, to: options.open())
                print(
                    options.json
                        ? "{\"tenants\":\(tenants),\"version\":\(version)}" : "tenants=\(tenants) version=\(version)")
            }
        }

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print the catalog's tenants as a tenants file (its version on standard error).")

            @OptionGroup var options: StoreOptions

            func run() throws {
                let (text, version) = try TenantCatalog.file(options.open())
                print(text, terminator: "")
                FileHandle.standardError.write(Data("version=\(version)\n".utf8))
            }
        }
    }
}
