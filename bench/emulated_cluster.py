"""What the scale benchmarks share: an emulator's TLS certificate, a probe of its loop's
lag, CPU and memory readings, percentiles."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "emulator")])
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
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "emulator.crt", directory / "emulator.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class LagProbe(threading.Thread):
    """How late the emulator's loop answers, sampled every ``every`` seconds: when it lags,
    so does every watch event it sends, whatever the triggerer does."""

    def __init__(self, emulator: Any, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.emulator, self.every = emulator, every
        self.lags: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            asked = time.monotonic()
            self.emulator.call(lambda: None)
            self.lags.append(time.monotonic() - asked)


def cpu_between(samples: list[tuple[float, float]], since: float, until: float) -> float:
    """CPU seconds spent between two moments, from (time, CPU so far) samples."""

    def at(moment: float) -> float:
        return next((cpu for t, cpu in samples if t >= moment), samples[-1][1])

    return at(until) - at(since)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))] if ordered else float("nan")


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
