"""What the relay binary brings into its process: never full Foundation (libFoundation,
FoundationInternationalization, the ICU library and its ~30 MB of data), which cost several MiB
of resident memory at start. FoundationEssentials is allowed; `Sources/` imports nothing else.

Each way Foundation could come back is checked where it would show:
- a dynamic build (`swift build -c release`): the shared libraries the loader maps (`ldd`,
  dependencies of dependencies included);
- a build with the Swift libraries linked in (`--static-swift-stdlib`): ICU's data, which
  Foundation's internationalization needs, and Foundation's symbols (`nm`; a stripped binary
  has none, so only the data check applies to it).
"""

import mmap
import re
import shutil
import subprocess

import pytest

FOUNDATION_LIBRARIES = re.compile(
    r"\b(libFoundation|libFoundationInternationalization|lib_FoundationICU|libFoundationNetworking|libFoundationXML)\.so\b")
# Swift symbols of the modules Foundation, FoundationInternationalization, FoundationNetworking,
# FoundationXML (mangled: `$s` + name length + name), and ICU's functions as swift-foundation-icu
# names them (`swift_ucol_open`, `swift_u_strlen`, ...).
FOUNDATION_SYMBOLS = re.compile(
    r" (\$s10Foundation|\$s30FoundationInternationalization|\$s20FoundationNetworking|\$s13FoundationXML"
    r"|swift_u[a-z]*_)\w*$")
# The name ICU's data package has in every ICU version (icudt76l: ICU 76, little-endian).
ICU_DATA_MARKER = b"icudt"


def test_the_loader_maps_no_foundation_library(relay_bin):
    assert shutil.which("ldd"), "ldd is not installed"
    listed = subprocess.run(["ldd", str(relay_bin)], capture_output=True, text=True, timeout=30)
    assert "libc.so" in listed.stdout, f"ldd could not read the binary: {listed.stdout}{listed.stderr}"
    found = sorted({m.group(0) for m in FOUNDATION_LIBRARIES.finditer(listed.stdout)})
    assert found == [], f"{relay_bin} loads {found}; Sources/ must import FoundationEssentials, not Foundation"


def test_no_icu_data_is_linked_in(relay_bin):
    with open(relay_bin, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as image:
        at = image.find(ICU_DATA_MARKER)
    assert at == -1, f"{relay_bin} holds ICU's data (at byte {at}): Foundation was linked in"


def test_no_foundation_symbol_is_linked_in(relay_bin):
    assert shutil.which("nm"), "nm is not installed (binutils)"
    # Defined symbols (a library linked in) and undefined ones (a library to be loaded) alike.
    listed = subprocess.run(["nm", str(relay_bin)], capture_output=True, text=True, timeout=120)
    if "no symbols" in listed.stderr:
        pytest.skip("the binary is stripped: only the ICU data check applies to it")
    assert listed.returncode == 0, listed.stderr
    assert "$s10OAuthRelay" in listed.stdout, "nm listed none of the relay's own Swift symbols"
    found = [line for line in listed.stdout.splitlines() if FOUNDATION_SYMBOLS.search(line)]
    assert found == [], f"{relay_bin} links in Foundation: {len(found)} symbols, such as {found[:5]}"
