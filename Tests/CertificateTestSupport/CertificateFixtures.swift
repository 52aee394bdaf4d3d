/// Two certificates made once with the `openssl` command, and what openssl says of them, for
/// tests that need a certificate's bytes known independently of the relay's code: a CA with an EC
/// P-256 key and, issued by it, a leaf with an RSA 2048 key. Their private keys were thrown away;
/// only public values are here. Each PEM text ends with a line break, as a PEM file does. Made with:
///
///     openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
///         -days 36500 -subj "/CN=oauth-relay test CA"
///     openssl req -new -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=oauth-relay test client"
///     openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 36500
///
/// and each value below with `openssl x509 -in C.pem -outform der | openssl dgst -sha256 -r` (or
/// `-sha1`), `... | openssl dgst -sha256 -binary | openssl base64 -A | tr '+/' '-_' | tr -d '='` and
/// `... | openssl base64 -A`.
public enum CertificateFixtures {
    public static let leafPEM = """
-----BEGIN CERTIFICATE-----
MIICCDCCAa4CFEFH8KPElB8QeEKg21NSQAjr71BlMAoGCCqGSM49BAMCMB4xHDAa
BgNVBAMME29hdXRoLXJlbGF5IHRlc3QgQ0EwIBcNMjYxMTI2MjI1NzIwWhgPMjEy
NjExMDIyMjU3MjBaMCIxIDAeBgNVBAMMF29hdXRoLXJlbGF5IHRlc3QgY2xpZW50
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAkLgl5u5M0aRlL3mJMmwu
MRuw21dGskTN2jBbBwsY7ZP5KtWE/IBq8RVAIOUkXtSiD1LoG0mmESB4n5TpeTa0
ZUId3vCSwxlOVDtj3NJob/yzCOmfVLHZxavr2uyvhGfCF323LyPl1BqUTQfqOnsr
WXLJVlzxQwhgMujpmXodkgqXPCQztTDd1Iq2JEX0Yi3c/Jg1nYMqBu45qsiya42V
A/JIQF2xdxPU/kj3SzsuBEFY+a2OIHUIIxJ5E+f820AZOA2MgWr+L9+RoOBSN/Wa
EGe2tIHVVR7huhiidKwJh1sOSORj+gzCFW7xkCJHbqpbzYtgVne5cDIyeBz/JARi
TwIDAQABMAoGCCqGSM49BAMCA0gAMEUCIDHS8QCr/gLqH4D1LpkjEZF42fjx9glD
Uny4jbOjKmpGAiEAgdcCIjgjZCyuwZH7ZqMQ2NMk0LSFhfytBM/MaH312zY=
-----END CERTIFICATE-----

"""

    public static let caPEM = """
-----BEGIN CERTIFICATE-----
MIIBkjCCATmgAwIBAgIUDLS9TYEnNPbNLxtrMtOmk1LN6hQwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTb2F1dGgtcmVsYXkgdGVzdCBDQTAgFw0yNjExMjYyMjU3MTla
GA8yMTI2MTEwMjIyNTcxOVowHjEcMBoGA1UEAwwTb2F1dGgtcmVsYXkgdGVzdCBD
QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABG0k+QluPwmWxCz8H5G+7jSWVD+R
uUBI7sGp8aGKufaA/7cR/lcMR8Bunww/xHYcFz9faFJHGWZSXbB7Daqu9dujUzBR
MB0GA1UdDgQWBBT9J6VBNd6U3qgHikY6mGsI6GMIRDAfBgNVHSMEGDAWgBT9J6VB
Nd6U3qgHikY6mGsI6GMIRDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cA
MEQCIHL6E14Bh7DvmmxEEXFGTVd7UoIoWUWfu6Oflh9EocsWAiBQuOuM3Ebj/+IV
uIjWo50DdryHRPKVcpwVE/2MG5yyHA==
-----END CERTIFICATE-----

"""

    /// `openssl x509 -in leaf.pem -pubkey -noout`.
    public static let leafPublicKeyPEM = """
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAkLgl5u5M0aRlL3mJMmwu
MRuw21dGskTN2jBbBwsY7ZP5KtWE/IBq8RVAIOUkXtSiD1LoG0mmESB4n5TpeTa0
ZUId3vCSwxlOVDtj3NJob/yzCOmfVLHZxavr2uyvhGfCF323LyPl1BqUTQfqOnsr
WXLJVlzxQwhgMujpmXodkgqXPCQztTDd1Iq2JEX0Yi3c/Jg1nYMqBu45qsiya42V
A/JIQF2xdxPU/kj3SzsuBEFY+a2OIHUIIxJ5E+f820AZOA2MgWr+L9+RoOBSN/Wa
EGe2tIHVVR7huhiidKwJh1sOSORj+gzCFW7xkCJHbqpbzYtgVne5cDIyeBz/JARi
TwIDAQAB
-----END PUBLIC KEY-----

"""

    /// SHA-256 and SHA-1 of the leaf's DER, hex.
    public static let leafSHA256Hex = "fad9f1775fb2c348ce812044d132dc0d01daa9d41d35c7f57bebfcebf81a2a68"
    public static let leafSHA1Hex = "a2b88818a70044ac285b05a796c823ee66326afd"
    /// The leaf's `x5t#S256` and `x5t`: those digests, base64url without padding.
    public static let leafSHA256Thumbprint = "-tnxd1-yw0jOgSBE0TLcDQHaqdQdNcf1e-v86_gaKmg"
    public static let leafSHA1Thumbprint = "oriIGKcARKwoWwWnlsgj7mYyav0"
    /// SHA-256 of the CA's DER, hex.
    public static let caSHA256Hex = "0c5f47dbe85a30f10dfcc084abfd63411f081123de5434a7a1de1ad028ccf474"

    /// Each certificate's DER in standard base64 with padding, as `x5c` carries it.
    public static let leafDERBase64 = "MIICCDCCAa4CFEFH8KPElB8QeEKg21NSQAjr71BlMAoGCCqGSM49BAMCMB4xHDAaBgNVBAMME29hdXRoLXJlbGF5"
        + "IHRlc3QgQ0EwIBcNMjYxMTI2MjI1NzIwWhgPMjEyNjExMDIyMjU3MjBaMCIxIDAeBgNVBAMMF29hdXRoLXJlbGF5"
        + "IHRlc3QgY2xpZW50MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAkLgl5u5M0aRlL3mJMmwuMRuw21dG"
        + "skTN2jBbBwsY7ZP5KtWE/IBq8RVAIOUkXtSiD1LoG0mmESB4n5TpeTa0ZUId3vCSwxlOVDtj3NJob/yzCOmfVLHZ"
        + "xavr2uyvhGfCF323LyPl1BqUTQfqOnsrWXLJVlzxQwhgMujpmXodkgqXPCQztTDd1Iq2JEX0Yi3c/Jg1nYMqBu45"
        + "qsiya42VA/JIQF2xdxPU/kj3SzsuBEFY+a2OIHUIIxJ5E+f820AZOA2MgWr+L9+RoOBSN/WaEGe2tIHVVR7huhii"
        + "dKwJh1sOSORj+gzCFW7xkCJHbqpbzYtgVne5cDIyeBz/JARiTwIDAQABMAoGCCqGSM49BAMCA0gAMEUCIDHS8QCr"
        + "/gLqH4D1LpkjEZF42fjx9glDUny4jbOjKmpGAiEAgdcCIjgjZCyuwZH7ZqMQ2NMk0LSFhfytBM/MaH312zY="
    public static let caDERBase64 = "MIIBkjCCATmgAwIBAgIUDLS9TYEnNPbNLxtrMtOmk1LN6hQwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTb2F1dGgt"
        + "cmVsYXkgdGVzdCBDQTAgFw0yNjExMjYyMjU3MTlaGA8yMTI2MTEwMjIyNTcxOVowHjEcMBoGA1UEAwwTb2F1dGgt"
        + "cmVsYXkgdGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABG0k+QluPwmWxCz8H5G+7jSWVD+RuUBI7sGp"
        + "8aGKufaA/7cR/lcMR8Bunww/xHYcFz9faFJHGWZSXbB7Daqu9dujUzBRMB0GA1UdDgQWBBT9J6VBNd6U3qgHikY6"
        + "mGsI6GMIRDAfBgNVHSMEGDAWgBT9J6VBNd6U3qgHikY6mGsI6GMIRDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49"
        + "BAMCA0cAMEQCIHL6E14Bh7DvmmxEEXFGTVd7UoIoWUWfu6Oflh9EocsWAiBQuOuM3Ebj/+IVuIjWo50DdryHRPKV"
        + "cpwVE/2MG5yyHA=="
}
