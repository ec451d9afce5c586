"""``python -m benchmarks.memory_plan --quick`` (2 worker processes of 384 MiB): the fit too large
for them fails at once with the numbers, and the fit planned at 90% of their usable memory
trains with no worker paused or restarted."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_memory_plan_benchmark():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    run = subprocess.run([sys.executable, "-m", "benchmarks.memory_plan", "--quick"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout
    # exit status 0: the failing case raised MemoryError within 10 s, and the fitting case
    # was planned within the usable share, trained, with no pause, restart or pid change
    assert run.returncode == 0, out + run.stderr[-3000:]
    seconds = float(re.search(r"too large: rows alone: [\d,]+ rows: MemoryError after "
                              r"([\d.]+) s", out).group(1))
    assert seconds < 10
    need = int(re.search(r"rows alone need at least (\d+) MiB on 2 worker\(s\)", out).group(1))
    usable = int(re.search(r"over the (\d+) MiB the workers may use together \(0.8 x their "
                           r"memory_limit, 384 MiB\)", out).group(1))
    assert need > usable == round(2 * 0.8 * 384)
    row = re.search(r"\| fits \(memory\) \| [\d,]+ \| (\d+)/(\d+) \| 384 \| (\d+) \(\d+\)/(\d+) "
                    r"\(\d+\) \| no \| no \|", out)
    assert row is not None, out
    planned, measured = [int(v) for v in row.groups()[:2]], [int(v) for v in row.groups()[2:]]
    assert max(planned) <= 0.8 * 384 and min(planned) >= 0.8 * 0.8 * 384  # near 90%
    assert max(measured) < 0.8 * 384  # below Dask's pause threshold
