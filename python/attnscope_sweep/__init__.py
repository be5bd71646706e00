"""Head scores over a prompt set on Dask workers (issue 21; docs/analyses.md).

    python3 -m attnscope_sweep --prompts P.jsonl --model DIR --shards N --out HEADS.csv
        [--scheduler ADDRESS] [--scores prev,dup,...] [--workers W] [--work DIR]

Each shard K/N is one task: a worker runs ``attnscope heads DIR --prompts P.jsonl --shard K/N
--out PART_K.json`` (the binary from $ATTNSCOPE_BIN, else ``attnscope`` on PATH, on the worker),
then the driver runs ``attnscope merge PART_1.json ... --out HEADS.csv``. The sums are exact, so
the result equals the unsharded run's. Without --scheduler a dask.distributed LocalCluster of
--workers processes (one thread each) runs on this machine; with it, the workers must see the
same paths (a shared file system). Dask is Debian's python3-distributed; nothing is downloaded.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


class SweepError(RuntimeError):
    pass


def binary():
    """$ATTNSCOPE_BIN if set, else attnscope on PATH."""
    explicit = os.environ.get("ATTNSCOPE_BIN")
    if explicit:
        return explicit
    found = shutil.which("attnscope")
    if found is None:
        raise SweepError("cannot find the attnscope binary: put it on PATH or set ATTNSCOPE_BIN")
    return found


def run_shard(attnscope, model, prompts, shard, shards, scores, out):
    """One task: `attnscope heads` on shard `shard` of `shards`. Returns `out`."""
    command = [attnscope, "heads", model, "--prompts", prompts, "--shard", f"{shard}/{shards}",
               "--scores", scores, "--out", out]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SweepError(f"shard {shard}/{shards}: {' '.join(command)} exited {done.returncode}: "
                         f"{done.stderr.strip()}")
    return out


def sweep(prompts, model, shards, out, scheduler=None, scores="prev,dup,induction,sink,entropy",
          workers=2, work=None):
    """Maps the shards onto Dask workers, merges their PART files into `out` (a CSV)."""
    from dask.distributed import Client, LocalCluster  # Debian: python3-distributed

    attnscope = binary()
    prompts, model, out = (os.path.abspath(p) for p in (prompts, model, out))
    work = os.path.abspath(work) if work else tempfile.mkdtemp(prefix="attnscope_sweep_")
    os.makedirs(work, exist_ok=True)
    parts = [os.path.join(work, f"part_{k}_of_{shards}.json") for k in range(1, shards + 1)]
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futures = [client.submit(run_shard, attnscope, model, prompts, k, shards, scores, part,
                                 pure=False)
                   for k, part in zip(range(1, shards + 1), parts)]
        client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    done = subprocess.run([attnscope, "merge", *parts, "--out", out], capture_output=True, text=True)
    if done.returncode != 0:
        raise SweepError(f"attnscope merge exited {done.returncode}: {done.stderr.strip()}")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m attnscope_sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", required=True, help="P.jsonl, one {\"text\": ...} per line")
    parser.add_argument("--model", required=True, help="the model folder DIR")
    parser.add_argument("--shards", type=int, required=True, help="number of shards N (>= 1)")
    parser.add_argument("--out", default="HEADS.csv", help="the merged CSV (default HEADS.csv)")
    parser.add_argument("--scheduler", help="a Dask scheduler address; default: a LocalCluster")
    parser.add_argument("--scores", default="prev,dup,induction,sink,entropy")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    parser.add_argument("--work", help="folder for the PART files (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.shards < 1:
        parser.error("--shards must be at least 1")
    try:
        print(sweep(args.prompts, args.model, args.shards, args.out, args.scheduler, args.scores,
                    args.workers, args.work))
    except SweepError as e:
        print(f"attnscope_sweep: {e}", file=sys.stderr)
        return 2
    return 0
