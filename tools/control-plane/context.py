"""Write a Go module context that builds a module whose own go.mod has local ``replace`` lines.

``go install M/cmd@V`` refuses a module whose go.mod replaces its siblings with local folders
(Kubernetes' staging modules, etcd's api/client/pkg). This reads that go.mod and writes a
main module that requires ``M V`` and replaces each such sibling with the version published
alongside it: ``v0.Y.Z`` for Kubernetes' staging modules at ``v1.Y.Z``, the same version for
etcd's. Generated from the module's go.mod, never by hand.

Usage: python3 context.py MODULE VERSION GOMOD_PATH OUT_DIR
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LOCAL_REPLACE = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+v\S+)?\s+=>\s+(\.\.?/\S*)\s*$")


def sibling_version(module: str, target: str, version: str) -> str:
    """The published version of a sibling that MODULE@VERSION replaces with a local folder."""
    if module == "k8s.io/kubernetes" and target.startswith("k8s.io/"):
        return "v0." + version.split(".", 1)[1]
    return version


def local_replaces(gomod: str) -> list[str]:
    out = []
    for line in gomod.splitlines():
        m = LOCAL_REPLACE.match(line)
        if m and "FORBIDDEN" not in m.group(2):
            out.append(m.group(1))
    return out


def main() -> None:
    module, version, gomod_path, out_dir = sys.argv[1:5]
    gomod = Path(gomod_path).read_text()
    go_line = re.search(r"^go (\S+)$", gomod, re.M)
    godebug = re.search(r"^godebug .*$", gomod, re.M)
    lines = [
        "module controlplane/build",
        "",
        f"go {go_line.group(1) if go_line else '1.25'}",
    ]
    if godebug:
        lines.append(godebug.group(0))
    lines += ["", f"require {module} {version}", "", "replace ("]
    lines += [f"\t{t} => {t} {sibling_version(module, t, version)}" for t in local_replaces(gomod)]
    lines.append(")")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "go.mod").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
