"""Copies a host's local folder (a profile, a debug dump) to its place under ``output_dir``:
GCS on Kubernetes, a folder locally, through its store's driver (stdlib only).

A cap bounds what one host sends: XLA can dump gigabytes of HLO for a large model, and a
thousand hosts each sending that would cost more than the failure it explains. Files go in the
order given (what matters most first), then smallest first, so a cut keeps the most files; what
is cut is named in ``CUT.txt`` beside what was sent, and in the returned summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_jax.runtime.stores import parse_location, store_for

CUT_FILE = "CUT.txt"
CUT_NAMES_SHOWN = 50  # names listed in CUT.txt; the count and size say the rest


@dataclass
class Uploaded:
    """What one upload sent and what the cap cut."""

    files: int = 0
    bytes: int = 0
    cut: list[tuple[str, int]] = field(default_factory=list)  # (relative name, size)

    @property
    def cut_bytes(self) -> int:
        return sum(size for _, size in self.cut)

    def summary(self, uri: str, cap_bytes: int) -> str:
        """One line for the log: what went where, and what the cap cut."""
        line = f"{self.files} file(s), {_mib(self.bytes)} to {uri}"
        if self.cut:
            line += (
                f"; {len(self.cut)} file(s), {_mib(self.cut_bytes)}, cut by the "
                f"{_mib(cap_bytes)} cap (named in {CUT_FILE})"
            )
        return line


def upload_folder(folder: Path, uri: str, cap_bytes: int, first: tuple[str, ...] = ()) -> Uploaded:
    """Every file below ``folder`` to ``uri``, the same relative names, within ``cap_bytes``.

    :param folder: the local folder to send.
    :param uri: where its files go: ``gs://bucket/prefix`` or an absolute path.
    :param cap_bytes: the most bytes sent; files past it are cut, never half sent.
    :param first: relative names sent before any other file (the ones worth most).
    """
    destination = parse_location(uri, "the upload's destination")
    store = store_for(destination)
    files = sorted(
        (_relative(path, folder), path.stat().st_size)
        for path in folder.rglob("*")
        if path.is_file() and not path.is_symlink()
    )
    rank = {name: i for i, name in enumerate(first)}
    files.sort(key=lambda item: (rank.get(item[0], len(rank)), item[1], item[0]))
    done = Uploaded()
    for name, size in files:
        if done.bytes + size > cap_bytes:
            done.cut.append((name, size))
            continue
        store.write(destination.join(*name.split("/")), (folder / name).read_bytes())
        done.files += 1
        done.bytes += size
    if done.cut:
        store.write(destination.join(CUT_FILE), _cut_note(done, cap_bytes).encode())
    return done


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _cut_note(done: Uploaded, cap_bytes: int) -> str:
    shown = done.cut[:CUT_NAMES_SHOWN]
    lines = [
        f"{len(done.cut)} file(s), {_mib(done.cut_bytes)}, were not uploaded: this host may send "
        f"at most {_mib(cap_bytes)} (sent: {done.files} file(s), {_mib(done.bytes)}).",
        "They stayed on the host and are gone with the pod. Not sent:",
        *(f"  {name} ({size} bytes)" for name, size in shown),
    ]
    if len(done.cut) > len(shown):
        lines.append(f"  ... and {len(done.cut) - len(shown)} more")
    return os.linesep.join(lines) + os.linesep


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"
