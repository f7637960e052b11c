"""Self-signed TLS certificates for the local servers that stand in for TLS ones: the
Kubernetes API emulator (a cluster CA, as GKE hands out) and Google's GKE API."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path


def self_signed(
    directory: Path, stem: str = "emulator", *, ip: str = "127.0.0.1", dns: str | None = None
) -> tuple[Path, Path]:
    """A certificate for ``dns`` (else for ``ip``) that is its own CA, and its key, as PEM
    files ``<stem>.crt`` and ``<stem>.key`` in ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns or stem)])
    san = x509.DNSName(dns) if dns else x509.IPAddress(ipaddress.ip_address(ip))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([san]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
