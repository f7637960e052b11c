"""A Kubernetes API emulator for tests: JobSets, their pods, watches and faults, over HTTP."""

from harness.k8s_emulator.api import Faults
from harness.k8s_emulator.emulator import Emulator
from harness.k8s_emulator.kubelet import (
    Exit,
    PodRun,
    PodScript,
    ProcessRunner,
    ScriptedRunner,
)

__all__ = ["Emulator", "Exit", "Faults", "PodRun", "PodScript", "ProcessRunner", "ScriptedRunner"]
