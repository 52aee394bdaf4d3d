// Fuzz target: the token store's entry decoder, as a damaged or hostile file reaches it.
//
// The input is read twice: as a whole entry file, and as the plaintext inside a validly sealed
// entry (so the fuzzer explores the field reader behind the tag, which it could not forge).
// Invariants: nothing crashes; an entry that opens re-encodes (with its own nonce) to the same
// bytes, and its plaintext is exactly what the encoder writes for the token read; a plaintext
// that reads as a token is the encoding of that token; no failure's words carry the plaintext.

import Crypto
import OAuth2
import TokenStore

private let key = SymmetricKey([UInt8](repeating: 0x42, count: 32))
private let fingerprint = SettingsFingerprint(bytes: [UInt8](repeating: 0x17, count: 32))
private let nonce = [UInt8](repeating: 0x05, count: 12)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoreEntry(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    checkEntry(bytes)
    checkPlaintext(bytes)
    return 0
}

private func checkEntry(_ bytes: [UInt8]) {
    guard let token = try? StoreEntry.decode(bytes, identity: "fuzz", fingerprint: fingerprint, key: key) else { return }
    let again = try! StoreEntry.encode(token, identity: "fuzz", fingerprint: fingerprint, key: key, nonce: Array(bytes[45..<57]))
    precondition(again == bytes, "an entry that opens re-encodes to other bytes")
}

private func checkPlaintext(_ plaintext: [UInt8]) {
    let box = try! AESGCM.seal(plaintext, key: key, authenticating: StoreEntry.associatedDataForTesting(identity: "fuzz", fingerprint: fingerprint),
                               nonce: nonce)
    let header = Array("ORTS".utf8) + [StoreEntry.formatVersion] + StoreEntry.keyID(of: key) + fingerprint.bytes
    let entry = header + box.combined
    do {
        let token = try StoreEntry.decode(entry, identity: "fuzz", fingerprint: fingerprint, key: key)
        let again = try! StoreEntry.encode(token, identity: "fuzz", fingerprint: fingerprint, key: key, nonce: nonce)
        precondition(again == entry, "a plaintext that reads as a token is not that token's encoding")
    } catch {
        if plaintext.count >= 8 {
            let words = Array("\(error)".utf8)
            precondition(!contains(words, plaintext), "a failure's words carry the plaintext")
        }
    }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for start in 0...(haystack.count - needle.count) where Array(haystack[start..<(start + needle.count)]) == needle { return true }
    return false
}
