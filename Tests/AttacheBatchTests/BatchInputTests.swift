import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

struct BatchInputTests {
    @Test func placeholder() {}
}
