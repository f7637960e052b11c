"""A GKE cluster for tests that name one (``cluster_name``, ``project_id``, ``location``): an
API server over TLS with its own CA (the emulator), found through Google's GKE API
(``gke_api.py``), with a ``google_cloud_default`` service-account key whose tokens the
emulator mints and, from then on, alone accepts (Google's API also takes the key's own signed
JWTs, as the real one does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.certificates import self_signed
from harness.k8s_emulator import Emulator
from tests.support.gke_api import GkeApi, GkeCluster, cluster_path
from tests.support.k8s_fixtures import checked_emulator

PROJECT, LOCATION, CLUSTER = "ml-platform", "us-central2", "tpu-v5e"
PATH = cluster_path(PROJECT, LOCATION, CLUSTER)


class ServiceAccount:
    """A Google service account's key (a fresh RSA key) as ``google_cloud_default`` holds it,
    whose ``token_uri`` is ``token_uri``, so google-auth's real JWT grant runs."""

    def __init__(self, token_uri: str, project: str = PROJECT) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.email = f"airflow@{project}.iam.gserviceaccount.com"
        self.public_pem = (
            key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        private_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        keyfile = {
            "type": "service_account",
            "project_id": project,
            "private_key_id": "k1",
            "private_key": private_pem,
            "client_email": self.email,
            "client_id": "1",
            "token_uri": token_uri,
        }
        extra = {"keyfile_dict": json.dumps(keyfile), "project": project}
        self.connection = json.dumps({"conn_type": "google_cloud_platform", "extra": extra})

    def signed(self, token: str) -> bool:
        """Whether ``token`` is a JWT this account signed, unexpired: what Google's APIs take
        from a service account instead of an OAuth token (google-auth's self-signed JWT,
        which the generated gRPC clients such as ClusterManagerClient send)."""
        from google.auth import jwt

        try:
            claims = jwt.decode(token, certs=self.public_pem)
        except ValueError:
            return False
        return claims.get("iss") == self.email


@dataclass
class Gke:
    """The cluster ``PROJECT/LOCATION/CLUSTER``, and what a process needs to reach it."""

    emulator: Emulator
    api: GkeApi
    account: ServiceAccount  # google_cloud_default's
    env: dict[str, str]  # the Google connection, and the trust and route to both servers

    @property
    def operator_kwargs(self) -> dict[str, str]:
        return {"cluster_name": CLUSTER, "project_id": PROJECT, "location": LOCATION}


@contextmanager
def gke_cluster(directory: Path) -> Iterator[Gke]:
    cert, key = self_signed(directory, "gke-cluster")
    emulator = checked_emulator().start((cert, key))
    emulator.api.tokens.clear()  # Google's tokens only, not the kubeconfig one
    account = ServiceAccount(f"{emulator.url}/token")
    api = GkeApi(
        directory, accepts=lambda token: token in emulator.api.minted or account.signed(token)
    ).start()
    try:
        api.add(
            PROJECT,
            LOCATION,
            CLUSTER,
            GkeCluster(emulator.url.removeprefix("https://"), cert.read_bytes()),
        )
        env = {
            "AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT": account.connection,
            "REQUESTS_CA_BUNDLE": str(cert),  # google-auth's token requests (requests)
            **api.env,
        }
        yield Gke(emulator, api, account, env)
    finally:
        api.stop()
        emulator.stop()


@pytest.fixture(scope="module")
def gke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gke]:
    with gke_cluster(tmp_path_factory.mktemp("gke")) as cluster:
        yield cluster
