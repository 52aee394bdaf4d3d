import JOSE
import XCTest

/// RFC 9449 §11.1: a proof's `jti` is refused a second time within its window; the memory is
/// bounded and, when full, refuses new proofs rather than forgetting unexpired ones.
final class ProofReplayMemoryTests: XCTestCase {
    private func accepted(_ jti: String, key: String = "key-A", until end: Int64 = 160) -> DPoPAcceptedProof {
        DPoPAcceptedProof(jti: jti, issuedAt: end - 60, keyThumbprint: key, acceptedUntil: end)
    }

    func testASecondUseWithinTheWindowIsAReplay() {
        var memory = ProofReplayMemory()
        XCTAssertEqual(memory.admit(accepted("one"), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("one"), now: 101), .replayed)
        XCTAssertEqual(memory.admit(accepted("two"), now: 101), .fresh)
        XCTAssertEqual(memory.count, 2)
    }

    /// The same `jti` from another key is another proof: one client cannot block another's.
    func testTheSameJTIFromAnotherKeyIsAnotherProof() {
        var memory = ProofReplayMemory()
        XCTAssertEqual(memory.admit(accepted("one", key: "key-A"), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("one", key: "key-B"), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("one", key: "key-B"), now: 100), .replayed)
    }

    /// Key and jti are kept apart: ("key-A", "bc") is not ("key-Ab", "c").
    func testKeyAndJTIDoNotRunTogether() {
        var memory = ProofReplayMemory()
        XCTAssertEqual(memory.admit(accepted("bc", key: "key-A"), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("c", key: "key-Ab"), now: 100), .fresh)
    }

    /// Remembered through the last second of its window (the check accepts it then), forgotten
    /// after (the check refuses it as too old).
    func testAProofIsRememberedUntilItsWindowEnds() {
        var memory = ProofReplayMemory()
        XCTAssertEqual(memory.admit(accepted("one", until: 160), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("one", until: 160), now: 160), .replayed)
        XCTAssertEqual(memory.admit(accepted("two", until: 300), now: 161), .fresh)
        XCTAssertEqual(memory.count, 1, "the proof whose window ended is still held")
        XCTAssertEqual(memory.admit(accepted("one", until: 160), now: 161), .fresh)
    }

    func testWhenFullANewProofIsRefusedAndNothingUnexpiredIsForgotten() {
        var memory = ProofReplayMemory(capacity: 2)
        XCTAssertEqual(memory.admit(accepted("one", until: 150), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("two", until: 170), now: 100), .fresh)
        XCTAssertEqual(memory.admit(accepted("three", until: 170), now: 100), .full)
        XCTAssertEqual(memory.count, 2)
        XCTAssertEqual(memory.admit(accepted("one", until: 150), now: 120), .replayed, "a replay is named as one even when full")
        XCTAssertEqual(memory.admit(accepted("two", until: 170), now: 120), .replayed)
        // Room again once the first window ends.
        XCTAssertEqual(memory.admit(accepted("three", until: 170), now: 151), .fresh)
        XCTAssertEqual(memory.admit(accepted("two", until: 170), now: 151), .replayed)
    }

    /// Windows end in another order than proofs arrive (their `iat`s differ): each is forgotten
    /// at its own end, checked against a plain model over many random proofs.
    func testProofsAreForgottenInTheOrderTheirWindowsEnd() {
        var memory = ProofReplayMemory(capacity: 500)
        var model: [String: Int64] = [:]
        var random = SystemRandomNumberGenerator()
        var now: Int64 = 1_000
        for step in 0..<20_000 {
            now += Int64.random(in: 0...1, using: &random)
            let jti = "jti-\(Int.random(in: 0..<800, using: &random))"
            let end = now + Int64.random(in: 0...120, using: &random)
            model = model.filter { $0.value >= now }
            let expected: ProofReplayMemory.Answer
            if model[jti] != nil {
                expected = .replayed
            } else if model.count >= 500 {
                expected = .full
            } else {
                expected = .fresh
                model[jti] = end
            }
            XCTAssertEqual(memory.admit(accepted(jti, until: end), now: now), expected, "step \(step)")
            XCTAssertEqual(memory.count, model.count, "step \(step)")
            if memory.count != model.count { return }
        }
    }
}
