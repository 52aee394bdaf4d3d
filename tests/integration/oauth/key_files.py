"""Private keys as the relay reads them (PKCS#8 PEM files: `clientKeyFile`, `dpop.keyFile`), their
public halves as IdPs register them, and the RFC 7638 thumbprint a DPoP-bound token names
(`cnf.jkt`), computed by jwcrypto, a JOSE library the relay did not write."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from jwcrypto import jwk


def pem(key, private: bool) -> str:
    """The private key as unencrypted PKCS#8 PEM, or its public key as SubjectPublicKeyInfo PEM."""
    if private:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption()).decode()
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def key_file(tmp_path, sensitive, key, name: str = "client-key.pem") -> str:
    """Writes `key` as a PEM file `name` in `tmp_path` (its body joins the leak scan); its path."""
    text = pem(key, True)
    sensitive.add(f"private key {name}", "".join(text.splitlines()[1:-1]))
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def thumbprint(key) -> str:
    """The JWK thumbprint (RFC 7638, SHA-256) of the key's public half."""
    return jwk.JWK.from_pem(pem(key, False).encode()).thumbprint()
