"""Writes the reference symbols QRCodeTests compares against, made by two QR Code encoders the
project did not write, both from PyPI and pinned in tests/requirements.txt:

    .venv-test/bin/python Tests/QRCodeTests/Fixtures/make_fixtures.py

- `symbols/NAME.txt`, by python-qrcode: one symbol per file for the inputs in CASES, drawn with a
  fixed mask. Header lines start with `#`: `input-hex`, `level`, `min-version`, `version` (the
  smallest the input fits in from `min-version` on) and `mask`. Then the matrix, one row per
  line, 1 for a dark module, without the quiet zone.
- `versions.txt`, by segno: every version 1-40 at every level: the byte-mode capacity; the FNV-1a
  64 hash of the matrix (its rows as 0/1 text, each ending in a newline) of the symbol that holds
  `filler(version, level, capacity)` at exactly that version with mask (version + level) % 8
  (hashes keep 160 symbols of up to 177x177 modules out of the repository); and the mask segno
  chooses by the penalty rules for that input.

Why two: segno 1.6.6 writes an extra 0x00 codeword before the pad codewords whenever the bit
stream already ends on a codeword boundary after the terminator (always, in byte mode), where
ISO/IEC 18004:2015 section 7.4.10 adds pad bits only to reach a boundary; so its padded symbols
differ from the standard's in data (both still decode). python-qrcode pads as the standard does,
but its mask penalty departs from Table 11 in rule N3 (it ignores the quiet zone and counts a
pattern with light on both sides twice), while segno scores as the Swift encoder does. So padded
symbols come from python-qrcode and the mask choices from segno, on inputs that fill their symbol
(no padding: there the two encoders write the same modules, which this script checks).

Every call forces byte mode, and keeps segno from raising the error correction level
(boost_error=False), as the Swift encoder does.
"""

from __future__ import annotations

import pathlib

import qrcode
import segno
from qrcode.util import MODE_8BIT_BYTE, QRData

HERE = pathlib.Path(__file__).resolve().parent
LEVELS = "LMQH"

# name: (input, level, minimum version, fixed mask). The fixed masks cover 0-7; the versions
# cover 1, the single-block and multi-block versions up to 10, version information (7+), a
# 16-bit count field (10+), and alignment grids of 4, 6 and 7 centres (14, 32's odd spacing, 40).
CASES = {
    "empty-L": (b"", "L", 1, 0),
    "digits-M": (b"01234567", "M", 1, 1),
    "device-url-M": (b"https://idp.example.com/device", "M", 1, 2),
    "utf8-Q": ("Grüße, 世界 — QR ✓".encode(), "Q", 1, 3),
    "device-complete-url-M": (
        b"https://login.example.com/realms/developers/protocol/openid-connect/auth/device"
        b"?user_code=WDJB-MJHT&client_id=oauth-relay-dev&tenant=acme-corporation-engineering"
        b"&ui_locales=en-GB&prompt=consent&session=4f2c9a7e",
        "M", 1, 4),
    "sentence-H": (b"The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun. 0123456789", "H", 1, 5),
    "short-v14-L": (b"oauth-relay", "L", 14, 6),
    "short-v32-Q": (b"https://127.0.0.1:8080/.oauth-relay/login/me", "Q", 32, 7),
    "short-v40-H": (b"x" * 300, "H", 40, 2),
}


def make(data: bytes, level: str, version: int | None = None, mask: int | None = None):
    return segno.make_qr(data, error=level, version=version, mode="byte", mask=mask, boost_error=False)


def rows(matrix) -> list[str]:
    return ["".join("1" if module else "0" for module in row) for row in matrix]


def python_qrcode_rows(data: bytes, level: str, version: int, mask: int) -> list[str]:
    levels = {"L": qrcode.constants.ERROR_CORRECT_L, "M": qrcode.constants.ERROR_CORRECT_M,
              "Q": qrcode.constants.ERROR_CORRECT_Q, "H": qrcode.constants.ERROR_CORRECT_H}
    symbol = qrcode.QRCode(version=version, error_correction=levels[level], mask_pattern=mask, border=0)
    symbol.add_data(QRData(data, mode=MODE_8BIT_BYTE))
    symbol.make(fit=False)
    return rows(symbol.modules)


def fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def filler(version: int, level: str, count: int) -> bytes:
    """Bytes that use every value, different per version and level."""
    return bytes((i * 7 + version * 13 + LEVELS.index(level)) & 0xFF for i in range(count))


def capacity(version: int, level: str) -> int:
    low, high = 0, 3000  # the most any symbol holds is 2953 bytes
    while low < high:
        middle = (low + high + 1) // 2
        try:
            make(b"a" * middle, level, version)
            low = middle
        except segno.DataOverflowError:
            high = middle - 1
    return low


def main() -> None:
    symbols = HERE / "symbols"
    symbols.mkdir(exist_ok=True)
    for name, (data, level, min_version, mask) in CASES.items():
        version = next(v for v in range(min_version, 41) if len(data) <= capacity(v, level))
        header = [f"# input-hex: {data.hex()}", f"# level: {level}", f"# min-version: {min_version}",
                  f"# version: {version}", f"# mask: {mask}"]
        (symbols / f"{name}.txt").write_text("\n".join(header + python_qrcode_rows(data, level, version, mask)) + "\n")

    lines = ["# version level capacity mask fnv1a64 auto-mask (see make_fixtures.py)"]
    for version in range(1, 41):
        for level in LEVELS:
            count = capacity(version, level)
            mask = (version + LEVELS.index(level)) % 8
            data = filler(version, level, count)
            symbol = make(data, level, version, mask)
            assert symbol.version == version and symbol.mask == mask
            assert rows(symbol.matrix) == python_qrcode_rows(data, level, version, mask), (version, level)
            digest = fnv1a64("".join(row + "\n" for row in rows(symbol.matrix)))
            lines.append(f"{version} {level} {count} {mask} {digest:016x} {make(data, level, version).mask}")
    (HERE / "versions.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
