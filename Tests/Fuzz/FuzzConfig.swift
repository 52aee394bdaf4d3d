// Fuzz target: the configuration decoder (JSON, `${…}` interpolation, every key).
//
// Invariants: any input decodes or fails with errors; every error names a JSON path starting
// with "$"; and no error message repeats the value of the secret the environment holds
// (`${SECRET}` may appear anywhere in the input).

import Config
import Foundation

private let secret = "fuzz-secret-value-8d1c"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let json = Data(bytes: start, count: count)
    do {
        _ = try ConfigLoader.decode(json: json, baseDirectory: "/nonexistent-fuzz-dir",
                                    environment: ["SECRET": secret, "PORT": "8180"])
    } catch {
        for problem in error.errors {
            precondition(problem.path.hasPrefix("$"), "an error without a JSON path: \(problem)")
            precondition(!"\(problem)".contains(secret), "an error message shows a secret: \(problem)")
        }
    }
    return 0
}
