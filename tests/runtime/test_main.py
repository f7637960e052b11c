"""The runtime as a pod runs it: the launcher's command and env, the zipped runtime, no JAX
(``initialize=False``), and the termination message read back from its file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_jax.manifest.pod_command import TERMINATION_PATH_ENV, python_call
from airflow_provider_jax.runtime import stores
from airflow_provider_jax.runtime.call import CHUNKS_ENV
from airflow_provider_jax.runtime.messages import REPORT_PREFIX, parse_message
from tests.support.jobset_schema import REPO

PROGRAMS = "tests.support.programs"


def run_call(
    tmp_path: Path, process_id: int = 0, extra_env: dict[str, str] | None = None, **call: Any
) -> tuple[int, str, dict]:
    """Run one process of a call; its exit code, output and termination message."""
    argv, env = python_call(initialize=False, python=sys.executable, **call)
    termination = tmp_path / f"termination-{process_id}"
    out = subprocess.run(
        argv,
        env={
            **os.environ,
            **env,
            TERMINATION_PATH_ENV: str(termination),
            "JAX_PROCESS_ID": str(process_id),
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp_path),  # the bootstrap's zip and pip's target land here
            **(extra_env or {}),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.returncode, out.stdout + out.stderr, parse_message(termination.read_text())


def test_entrypoint_result_and_last_report(tmp_path):
    code, output, message = run_call(
        tmp_path, entrypoint=f"{PROGRAMS}:echo", kwargs={"lr": 0.1, "tags": ["a"]}
    )
    assert code == 0, output
    assert message == {
        "ok": True,
        "result": {"kwargs": {"lr": 0.1, "tags": ["a"]}, "process": 0},
        "report": {"loss": 0.25, "step": 3},
    }
    assert f'{REPORT_PREFIX}{{"loss":0.25,"step":3}}' in output


def test_only_the_leader_sends_its_result(tmp_path):
    code, _, message = run_call(tmp_path, process_id=1, entrypoint=f"{PROGRAMS}:echo")
    assert (code, message) == (0, {"ok": True})


def test_a_pathways_head_initializes_pathwaysutils_and_no_jax_distributed(tmp_path):
    """As the head container runs it: the manifest's env, ``pathwaysutils`` where the image
    has it (a stand-in that records its call), and the function once."""
    stand_in = tmp_path / "lib" / "pathwaysutils.py"
    stand_in.parent.mkdir()
    stand_in.write_text("import os\ndef initialize():\n    os.environ['PATHWAYS_READY'] = '1'\n")
    env = {
        "AIRFLOW_JAX_PATHWAYS": "1",
        "JAX_PLATFORMS": "proxy",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(stand_in.parent)]),
    }
    code, output, message = run_call(tmp_path, extra_env=env, entrypoint=f"{PROGRAMS}:pathways_env")
    assert code == 0, output
    assert message["result"] == {"ready": "1", "jax_imported": False}


def test_shipped_source(tmp_path):
    source = textwrap.dedent(
        """
        import dataclasses

        @dataclasses.dataclass
        class Point:
            x: int

        def scale(by):
            return dataclasses.asdict(Point(2 * by))

        def fail():
            raise RuntimeError("from shipped source")
        """
    )
    code, output, message = run_call(tmp_path, source=source, function="scale", kwargs={"by": 4})
    assert code == 0, output
    assert message["result"] == {"x": 8}

    code, _, message = run_call(tmp_path, source=source, function="fail")
    assert code == 1
    assert message["error"] == "RuntimeError: from shipped source"
    # The failing line of the shipped source shows in the traceback, as from a file.
    assert 'raise RuntimeError("from shipped source")' in message["traceback"]

    code, _, message = run_call(tmp_path, source=source, function="missing")
    assert message["error"] == "NameError: the shipped source defines no 'missing'"


def test_failure_message_has_the_traceback(tmp_path):
    code, output, message = run_call(tmp_path, entrypoint=f"{PROGRAMS}:broken")
    assert code == 1
    assert message["ok"] is False
    assert message["error"] == "KeyError: 'missing-key'"
    assert message["traceback"].rstrip().endswith("KeyError: 'missing-key'")
    assert "programs.py" in message["traceback"]
    assert "KeyError: 'missing-key'" in output  # and on stderr, for the log


def test_missing_entrypoint_module_is_explained(tmp_path):
    _, _, message = run_call(tmp_path, entrypoint="no_such_module:train")
    assert message["error"].startswith(
        "ModuleNotFoundError: entrypoint 'no_such_module:train': no module named 'no_such_module'"
    )
    _, _, message = run_call(tmp_path, entrypoint=f"{PROGRAMS}:nope")
    assert "has no attribute 'nope'" in message["error"]


@pytest.mark.parametrize(
    ("program", "error"),
    [
        ("not_json", "ResultNotReturnable: the function returned a builtins.set that is not"),
        ("nan", "ResultNotReturnable: the result contains NaN or infinity"),
    ],
)
def test_results_must_be_json(tmp_path, program, error):
    code, _, message = run_call(tmp_path, entrypoint=f"{PROGRAMS}:{program}")
    assert code == 1
    assert message["error"].startswith(error)
    assert message["class"] == "result error"  # the task fails without a retry
    assert "Nothing was kept: the task has no output_dir" in message["error"]


def test_a_result_json_cannot_carry_is_kept_in_output_dir(tmp_path):
    out = tmp_path / "out"
    code, _, message = run_call(tmp_path, entrypoint=f"{PROGRAMS}:nan", output_dir=str(out))
    assert code == 1
    assert "return None in its place" in message["error"]
    assert f"kept in {out}/result.unreturnable.json" in message["error"]
    assert (out / "result.unreturnable.json").read_text() == "NaN"
    assert not (out / "result.json").exists()  # Airflow reads no result of a failed run


def test_large_result_needs_output_dir(tmp_path):
    code, _, message = run_call(tmp_path, entrypoint=f"{PROGRAMS}:large", kwargs={"size": 5000})
    assert code == 1
    assert "too big for the 4096-byte termination message. Set output_dir" in message["error"]


def test_large_result_goes_to_a_local_output_dir(tmp_path):
    out = tmp_path / "run" / "out"
    code, output, message = run_call(
        tmp_path, entrypoint=f"{PROGRAMS}:large", kwargs={"size": 5000}, output_dir=str(out)
    )
    assert code == 0, output
    assert message == {"ok": True, "result_uri": f"{out}/result.json"}
    assert json.loads((out / "result.json").read_text()) == "x" * 5000


def test_large_result_goes_to_gcs(tmp_path, gcs_bucket):
    uri = f"gs://{gcs_bucket}/runs/1"
    code, output, message = run_call(
        tmp_path, entrypoint=f"{PROGRAMS}:large", kwargs={"size": 6000}, output_dir=uri
    )
    assert code == 0, output
    assert message["result_uri"] == f"{uri}/result.json"
    assert json.loads(stores.read_text(message["result_uri"])) == "x" * 6000


def _wheel(directory: Path, name: str, version: str, module_source: str) -> Path:
    """A minimal pure-Python wheel, so pip installs it offline."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module_source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{dist}/RECORD"])
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for arcname, text in files.items():
            wheel.writestr(arcname, text)
    return path


def test_pip_packages_install_at_process_start(tmp_path):
    wheel = _wheel(tmp_path, "airflow_jax_extra", "1.0", "VALUE = 42\n")
    source = "def use():\n    import airflow_jax_extra\n    return airflow_jax_extra.VALUE\n"
    code, output, message = run_call(
        tmp_path, source=source, function="use", pip_packages=[str(wheel)]
    )
    assert code == 0, output
    assert message["result"] == 42
    assert f"airflow-jax: pip install {wheel}" in output

    code, output, message = run_call(
        tmp_path, source=source, function="use", pip_packages=[str(tmp_path / "missing.whl")]
    )
    assert code == 1
    assert message["error"].startswith("RuntimeError: pip install")


def test_a_large_call_arrives_in_chunks(tmp_path):
    source = "# " + "padding " * 10_000 + "\ndef inc(n):\n    return n + 1\n"
    assert CHUNKS_ENV in python_call(source=source, function="inc")[1]
    code, output, message = run_call(tmp_path, source=source, function="inc", kwargs={"n": 1})
    assert code == 0, output
    assert message["result"] == 2
