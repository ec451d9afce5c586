"""Running a test's script in a process of its own (a fit whose workers are killed)."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def start_script(tmp_path, text, *args, name="script.py"):
    """Start ``text`` as a Python script with ``args`` (this checkout's ``oocgbdt`` and
    ``tests`` first on its path) in a process group of its own; returns the ``Popen`` (stdout
    piped, text)."""
    script = tmp_path / name
    script.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.Popen([sys.executable, str(script), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True, env=env)


def kill_script(proc):
    """SIGKILL a started script and every process of its group; returns its stdout."""
    os.killpg(proc.pid, signal.SIGKILL)
    return proc.communicate()[0]


def run_script(tmp_path, text, *args, timeout=120, what="the script"):
    """Run ``text`` as :func:`start_script` does and return its stdout. A script still running
    after ``timeout`` seconds is killed with its processes and the test fails."""
    proc = start_script(tmp_path, text, *args)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_script(proc)
        pytest.fail(f"{what} hung (killed after {timeout} s)")
    return out
