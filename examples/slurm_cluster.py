"""Train on a SLURM cluster through dask-jobqueue, from a Zarr dataset on a shared filesystem.

Demonstrates running oocgbdt on HPC: ``dask_jobqueue.SLURMCluster`` submits batch jobs that each
start one Dask worker (``cores=1, processes=1``, ``--memory`` per job), the cluster is scaled to
``--jobs`` jobs (default 2), and a ``Client`` on it becomes the default client, which
``GBDTRegressor.fit`` picks up. The data is the California housing table shipped with the
package, converted to a Zarr dataset in ``--workdir``; the workers read it from there, so the
folder must be on a filesystem that the compute nodes see (the default, ``./oocgbdt-slurm``
under the current folder, usually is when run from a home or project directory; ``/tmp`` is
not). Every fifth row is held out; the script prints the job script, the workers as they join,
the test RMSE and the RMSE of predicting the mean training label.

Needs ``dask-jobqueue`` (``pip install ".[jobqueue]"``) and SLURM's ``sbatch`` on the PATH.

Run::

    python examples/slurm_cluster.py --queue debug --walltime 00:20:00
    python examples/slurm_cluster.py --rows 4000 --n-estimators 20
    OOCGBDT_EXAMPLE_ROWS=4000 python examples/slurm_cluster.py
    python examples/slurm_cluster.py --show-job-script      # print the job script; submit nothing

``--account``, ``--queue`` (SLURM partition), ``--walltime`` and ``--memory`` are passed to
``SLURMCluster``; site defaults may also come from dask-jobqueue's configuration file.
"""
import argparse
import os
from pathlib import Path

import dask.array as da
from dask_jobqueue import SLURMCluster
from distributed import Client

import oocgbdt
from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path
from oocgbdt.io.convert import convert


def make_cluster(args):
    """A SLURMCluster whose jobs each run one single-threaded worker process."""
    return SLURMCluster(cores=1, processes=1, memory=args.memory, walltime=args.walltime,
                        queue=args.queue, account=args.account,
                        local_directory=args.local_directory,
                        log_directory=str(Path(args.workdir) / "logs"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=int(os.environ.get("OOCGBDT_EXAMPLE_ROWS", 0)),
                        help="use the first N rows of the table (default: all 20,640; env "
                             "OOCGBDT_EXAMPLE_ROWS)")
    parser.add_argument("--n-estimators", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2, help="batch jobs, one worker each")
    parser.add_argument("--memory", default="2GB", help="memory per job (default 2GB)")
    parser.add_argument("--walltime", default="00:30:00")
    parser.add_argument("--queue", default=None, help="SLURM partition")
    parser.add_argument("--account", default=None)
    parser.add_argument("--local-directory", default=None,
                        help="workers' scratch folder on the compute nodes")
    parser.add_argument("--workdir", default="oocgbdt-slurm",
                        help="shared folder for the dataset and job logs (default ./oocgbdt-slurm)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds to wait for the workers to start (default 600)")
    parser.add_argument("--show-job-script", action="store_true",
                        help="print the job script and exit without submitting")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir).resolve()

    if args.show_job_script:
        with make_cluster(args) as cluster:
            print(cluster.job_script())
        return

    workdir.mkdir(parents=True, exist_ok=True)
    ds = convert(quickstart_path(), workdir / "houses.zarr", label=QUICKSTART_LABEL,
                 chunk_rows=4_000, overwrite=True)
    X, y = (ds.X[:args.rows], ds.y[:args.rows]) if args.rows else (ds.X, ds.y)
    # The file is sorted by region: hold out every fifth row so both sets mix the regions.
    X_test, y_test = X[4::5], y[4::5]
    X_train = da.concatenate([X[i::5] for i in range(4)])
    y_train = da.concatenate([y[i::5] for i in range(4)])
    print(f"dataset {ds.path}")
    print(f"train rows: {X_train.shape[0]}, test rows: {X_test.shape[0]} (every 5th row)")

    with make_cluster(args) as cluster:
        print("job script:")
        print(cluster.job_script())
        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            print(f"waiting for {args.jobs} workers (jobs queued with sbatch)...", flush=True)
            client.wait_for_workers(args.jobs, timeout=args.timeout)
            for address, worker in client.scheduler_info()["workers"].items():
                print(f"worker {address}: {worker['nthreads']} thread(s), memory limit "
                      f"{worker['memory_limit'] / 2 ** 30:.2f} GiB")
            model = oocgbdt.GBDTRegressor(n_estimators=args.n_estimators, num_leaves=31,
                                          learning_rate=0.1)
            model.fit(X_train, y_train)            # trains on the default client's cluster
            pred = model.predict(X_test)           # lazy
            rmse = da.sqrt(((pred - y_test) ** 2).mean())
            baseline = da.sqrt(((y_test - y_train.mean()) ** 2).mean())
            rmse, baseline = client.compute([rmse, baseline], sync=True)
    print(f"trained {model.n_iter_} rounds on {args.jobs} SLURM jobs")
    print(f"test RMSE: {float(rmse):.4f}")
    print(f"baseline RMSE (mean training label): {float(baseline):.4f}")


if __name__ == "__main__":
    main()
