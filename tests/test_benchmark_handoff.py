"""`python -m benchmarks.handoff`: every way computes the sums of the plain Python loop, and
the table reports each way that ran, and says which threading layers did not load."""
import pytest

from benchmarks import handoff as ho


def _python_loop(n, x):
    for _ in range(n):
        x = x * 0.999999 + 1.0
    return x


def test_the_timed_loop_is_the_python_loop():
    loop, _ = ho._kernels()
    for n, x in ((1, 1.0), (1000, 2.0)):
        assert loop(n, x) == _python_loop(n, x)


@pytest.mark.parametrize("way", ["one thread", "KernelThreads"])
def test_in_process_ways_time_both_calls(way):
    out = ho.measure(way, [3.0], calls=5, gap_us=0.0)
    r = out["3"]
    assert r["us"] > 0 and r["alone_us"] > 0 and r["cpu_per_wall"] > 0


def test_quick_run_reports_every_way(capsys):
    assert ho.main(["--quick", "--work", "2", "--calls", "3"]) == 0
    text = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| way")}
    assert set(rows) == set(ho.WAYS)
    for way in ("one thread", "KernelThreads", "numba workqueue"):  # always loadable
        two_calls, excess, cpu = (float(v) for v in rows[way].split("|")[2].split("/"))
        assert two_calls > 0 and cpu > 0
    assert text.count("load average") == 3  # machine line, before, after
