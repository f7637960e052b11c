"""The hung-host watchdog and the main thread report one ending between them: a hang it began
to report is the process's (its message and exit code 124 go together), and once the main
thread has stopped it, it never fires. Each case is a process of its own (the watchdog ends
its process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from airflow_provider_jax.runtime.exits import EXIT_HUNG

# The main thread's error comes while the watchdog reports the hang: the report waits (up to
# 2 s) for the main thread to pass stop(), as a slow report would let it.
BOTH = """
import sys, threading, time
from airflow_provider_jax.runtime.watchdog import Watchdog

passed = threading.Event()
def on_hung(stacks, idle):
    print("watchdog: hung", flush=True)
    fired.set()
    passed.wait(2)
fired = threading.Event()
dog = Watchdog(0.2, on_hung)
dog.beat()
fired.wait(10)
dog.stop()  # the main thread's except, its function having raised in the hang
passed.set()
print("main: its own report", flush=True)
sys.exit(1)
"""

# The function returned, then a wait past the timeout (the process's own exit work).
STOPPED = """
import time
from airflow_provider_jax.runtime.watchdog import Watchdog

dog = Watchdog(0.2, lambda stacks, idle: print("watchdog: hung", flush=True))
dog.beat()
dog.stop()
time.sleep(1)
print("main: done", flush=True)
"""


# The dump fails (a full /tmp), and the main thread's function then raises.
NO_DUMP = """
import sys, threading
from airflow_provider_jax.runtime import watchdog

def no_room():
    raise OSError(28, "No space left on device")
watchdog.all_stacks = no_room
fired = threading.Event()
def on_hung(stacks, idle):
    print(f"watchdog: hung {stacks}", flush=True)
    fired.set()
dog = watchdog.Watchdog(0.2, on_hung)
dog.beat()
fired.wait(10)
dog.stop()
print("main: its own report", flush=True)
sys.exit(1)
"""


def run(program: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_hang_being_reported_is_the_ending_though_the_main_thread_then_fails():
    done = run(BOTH)
    assert done.returncode == EXIT_HUNG, done
    assert done.stdout == "watchdog: hung\n", done


def test_a_stopped_watchdog_never_fires():
    done = run(STOPPED)
    assert done.returncode == 0, done
    assert done.stdout == "main: done\n", done


def test_a_hang_whose_stacks_cannot_be_dumped_is_reported_and_ends_the_process():
    done = run(NO_DUMP)
    assert done.returncode == EXIT_HUNG, done
    assert done.stdout.startswith("watchdog: hung (the stacks could not be dumped:"), done
    assert "main:" not in done.stdout, done
