import Foundation
import TestSupport
import Testing

/// No code under Sources/ may drop a `CancellationError` (DESIGN §4: "No stage catches
/// `CancellationError` to carry on; it propagates up to the caller").
@Suite(.background) struct CancellationScanTests {
    @Test func sourcesDoNotSwallowCancellation() throws {
        let root = packageRoot()
        let sources = root.appendingPathComponent("Sources")
        var isDirectory: ObjCBool = false
        try #require(
            FileManager.default.fileExists(atPath: sources.path, isDirectory: &isDirectory) && isDirectory.boolValue,
            "no Sources/ at \(sources.path)")
        let findings = try CancellationScanner.scan(directory: sources, relativeTo: root)
        #expect(
            findings.isEmpty,
            """
            \(findings.count) site(s) may swallow CancellationError; rethrow it, or mark a safe site with \
            `// cancellation: <why this is safe>` on the line before:
            \(findings.map(\.description).joined(separator: "\n"))
            """)
        // The scan must have read something: the engine alone has dozens of catch sites.
        let scanned = try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(scanned.count > 10)
    }

    // MARK: - The heuristic itself

    static func lines(_ source: String) -> [Int] {
        CancellationScanner.scan(source: source, file: "t.swift").map(\.line)
    }

    @Test func findsTryQuestionAwaitAndSleep() {
        let source = """
            func f() async {
                _ = try? await g()
                try? await Task.sleep(for: .seconds(1))
                let x = try? h()
            }
            """
        #expect(Self.lines(source) == [2, 3])
    }

    @Test func findsCatchesThatSwallow() {
        let source = """
            func f() async {
                do { try await g() } catch { print(error) }
                do {
                    try await g()
                } catch let failure {
                    log(failure)
                    return
                }
                do { try await g() } catch let e as any Error { _ = e }
                do { try await g() } catch { result = .failure(OtherError()) }
                do { try await g() } catch { logger.error(error) }
            }
            """
        #expect(Self.lines(source) == [2, 5, 9, 10, 11])
    }

    @Test func acceptsCatchesThatRethrowForwardOrCheck() {
        let source = """
            func f() async throws {
                do { try await g() } catch { cleanup(); throw error }
                do { try await g() } catch { throw Mapped(error) }
                do { try await g() } catch let e as ArchiveError { return .failure(e) }
                do { try await g() } catch is XZError { return }
                do { try await g() } catch XZError.truncated { return }
                do { try await g() } catch let e where e is CancellationError { throw e }
                do { try await g() } catch { result = .failure(error) }
                do { try await g() } catch let e { continuation.resume(throwing: e) }
                do { try await g() } catch { if Task.isCancelled { return }; log(error) }
                do { try await g() } catch { Foundation.exit(status(for: error)) }
                do { try await g() } catch { return .gaveUp(error) }
                do {
                    try await g()
                } catch {
                    if error is CancellationError { throw error }
                    log(error)
                }
            }
            """
        #expect(Self.lines(source).isEmpty)
    }

    @Test func ignoresCommentsAndStringsAndHonoursTheMarker() {
        let source = #"""
            // try? await g() in a comment
            /* do { } catch { } /* nested */ try? await g() */
            let s = "catch { } try? await"
            let t = """
                do { try await g() } catch { }
                """
            let r = #"try? await "quoted" \(not code)"#
            let i = "\(try? await g())"
            func f() async {
                // cancellation: g never throws CancellationError, and a failure here is only a missed hint
                do { try await g() } catch { }
                try? await g() // cancellation: best effort, the caller checks for cancellation next
            }
            """#
        #expect(Self.lines(source) == [8])
    }

    @Test func reportsFileAndLine() {
        let findings = CancellationScanner.scan(source: "\n\nfunc f() async { try? await g() }\n", file: "Sources/X/Y.swift")
        #expect(
            findings.map(\.description) == ["Sources/X/Y.swift:3: `try?` swallows CancellationError: func f() async { try? await g() }"])
    }
}
