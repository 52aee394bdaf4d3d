#!/usr/bin/env bash
# Instructions a DPoP request costs beyond its signature, counted by callgrind (repeatable whatever
# else the machine runs): bench/instructions-per-request.sh run once with a Bearer token and once
# with a DPoP-bound token (`"dpop": true`, a fresh ES256 proof per request), the DPoP runs' profiles
# kept, and the signature's own instructions read from them (callgrind's inclusive cost of
# OpenSSL's `EVP_PKEY_sign`, the ECDSA signature of the digest, and of `EVP_Digest`, the SHA-256
# of the signing input), over the same 2N requests.
#
#   bench/dpop-instructions.sh [N]      N = 2000 (about 2 minutes: 4 relay runs under callgrind)
#   OAUTH_RELAY_BIN=… bench/…           another build
#
# Prints per request: Bearer, DPoP, the ECDSA signature, the SHA-256, and DPoP's cost beyond its
# signature (DPoP − ECDSA − SHA-256 − Bearer): writing the proof, its claims and base64url, and
# the longer head.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
bearer=$(TOKEN_TYPE=Bearer bench/instructions-per-request.sh "$N" | awk '{print $2}')
dpop=$(KEEP_PROFILE=$W/dpop TOKEN_TYPE=DPoP bench/instructions-per-request.sh "$N" | awk '{print $2}')
# Inclusive instructions of one function in a profile (0 when it never ran).
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v f="$2" '$0 ~ (":" f " ") || $0 ~ (":" f "$") { gsub(",", "", $1); print $1; found=1; exit } END { if (!found) print 0 }'
}
per2n() { echo $(( ($(inclusive "$W/dpop.$((3 * N))" "$1") - $(inclusive "$W/dpop.$N" "$1")) / (2 * N) )); }
ecdsa=$(per2n EVP_PKEY_sign)
sha=$(per2n EVP_Digest)
printf '%-34s %7d\n' "Bearer request" "$bearer" "DPoP request" "$dpop" "  its ECDSA signature (EVP_PKEY_sign)" "$ecdsa" \
  "  SHA-256 of the signing input" "$sha" "DPoP beyond its signature − Bearer" "$((dpop - ecdsa - sha - bearer))"
