import Dispatch
@testable import Tokens
import XCTest

/// The upstream DPoP nonces the workers share: one slot per identity and origin, a version that
/// moves only when the nonce changes, and workers' copies that read the slot again only then.
final class UpstreamDPoPNoncesTests: XCTestCase {
    private let origin = Array("https://api.internal:8443".utf8)

    func testANewSlotHoldsNoNonce() {
        let slot = SharedDPoPNonce()
        XCTAssertEqual(slot.version, 0)
        XCTAssertEqual(slot.read(), SharedDPoPNonce.Learnt(version: 0, nonce: nil))
        var copy = DPoPNonceCopy()
        XCTAssertNil(copy.nonce(in: slot))
    }

    func testOnlyANewNonceMovesTheVersion() {
        let slot = SharedDPoPNonce()
        XCTAssertTrue(slot.learn(Array("n-1".utf8), ifVersion: 0))
        XCTAssertEqual(slot.version, 1)
        XCTAssertFalse(slot.learn(Array("n-1".utf8), ifVersion: 1), "the nonce in force, heard again")
        XCTAssertEqual(slot.version, 1)
        XCTAssertTrue(slot.learn(Array("n-2".utf8), ifVersion: 1))
        XCTAssertEqual(slot.read(), SharedDPoPNonce.Learnt(version: 2, nonce: Array("n-2".utf8)))
    }

    /// The server rotates N1 -> N2; worker A hears N2 first. Worker B then reads an answer the
    /// server made before the rotation, to a proof B made with N1: it must not put N1 back for
    /// every worker.
    func testAnAnswerToAProofOfAnOlderVersionLeavesTheNewerNonce() {
        let slot = SharedDPoPNonce()
        slot.learn(Array("N1".utf8), ifVersion: 0)
        var workerA = DPoPNonceCopy(), workerB = DPoPNonceCopy()
        let provedByA = workerA.read(slot), provedByB = workerB.read(slot)
        XCTAssertEqual(provedByB, SharedDPoPNonce.Learnt(version: 1, nonce: Array("N1".utf8)))
        XCTAssertTrue(slot.learn(Array("N2".utf8), ifVersion: provedByA.version), "A's answer brings the rotation")
        XCTAssertEqual(slot.version, 2)
        XCTAssertFalse(slot.learn(Array("N1".utf8), ifVersion: provedByB.version), "B's answer predates the rotation")
        XCTAssertEqual(slot.read(), SharedDPoPNonce.Learnt(version: 2, nonce: Array("N2".utf8)))
        XCTAssertEqual(workerB.nonce(in: slot), Array("N2".utf8), "B's next proof carries N2")
        // Nor does an older answer bring a nonce newer still: the next proof's answer will.
        XCTAssertFalse(slot.learn(Array("N3".utf8), ifVersion: provedByB.version))
        XCTAssertEqual(slot.read().nonce, Array("N2".utf8))
        // A `use_dpop_nonce` answer to a proof at the version in force does move it.
        XCTAssertTrue(slot.learn(Array("N3".utf8), ifVersion: workerB.read(slot).version))
        XCTAssertEqual(slot.read(), SharedDPoPNonce.Learnt(version: 3, nonce: Array("N3".utf8)))
    }

    func testANonceOneWorkerLearnsIsInTheOthersNextRead() {
        let slot = UpstreamDPoPNonces().nonce(for: origin)
        var first = DPoPNonceCopy(), second = DPoPNonceCopy()
        XCTAssertNil(first.nonce(in: slot))
        XCTAssertNil(second.nonce(in: slot))
        slot.learn(Array("n-1".utf8), ifVersion: 0)
        XCTAssertEqual(second.nonce(in: slot), Array("n-1".utf8))
        slot.learn(Array("n-2".utf8), ifVersion: 1)
        XCTAssertEqual(first.nonce(in: slot), Array("n-2".utf8), "a copy two versions behind reads the latest")
        XCTAssertEqual(second.nonce(in: slot), Array("n-2".utf8))
    }

    func testOneSlotPerOrigin() {
        let nonces = UpstreamDPoPNonces()
        let slot = nonces.nonce(for: origin)
        XCTAssertTrue(nonces.nonce(for: origin) === slot, "every route to the origin shares its slot")
        XCTAssertFalse(nonces.nonce(for: Array("https://other.internal".utf8)) === slot)
        XCTAssertEqual(nonces.count, 2)
    }

    func testAReloadKeepsTheSlotsOfTheOriginsStillRouted() {
        let nonces = UpstreamDPoPNonces()
        let kept = nonces.nonce(for: origin)
        kept.learn(Array("n-1".utf8), ifVersion: 0)
        _ = nonces.nonce(for: Array("https://gone.internal".utf8))
        nonces.keepOnly(origins: [origin])
        XCTAssertEqual(nonces.count, 1, "an origin no route names any more is forgotten")
        XCTAssertTrue(nonces.nonce(for: origin) === kept)
        XCTAssertEqual(kept.read().nonce, Array("n-1".utf8))
    }

    /// Workers learning and reading at once (run under ThreadSanitizer by `make test-tsan`): every
    /// read is a nonce some worker learnt, and a copy's versions never go back.
    func testWorkersLearningAndReadingAtOnce() {
        let slot = SharedDPoPNonce()
        let learnt = (0..<50).map { Array("n-\($0)".utf8) }
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var copy = DPoPNonceCopy()
            var lastVersion: UInt64 = 0
            for round in 0..<2_000 {
                let proved = copy.read(slot)
                if let nonce = proved.nonce { XCTAssertTrue(learnt.contains(nonce)) }
                if round % 40 == worker { slot.learn(learnt[(round / 40) % learnt.count], ifVersion: proved.version) }
                let version = slot.version
                XCTAssertGreaterThanOrEqual(version, lastVersion)
                lastVersion = version
            }
        }
        XCTAssertGreaterThan(slot.version, 0)
    }
}
