"""Head scores over a prompt set on Dask workers (issues 21 and 33; docs/analyses.md).

    python3 -m attnscope_sweep --prompts P.jsonl --model DIR --out HEADS.csv
        [--shards N] [--workers W] [--threads T] [--scheduler ADDRESS] [--work DIR]
        [--scores prev,dup,...] [--exclude-bos] [--exclude-current-token] [--bos | --no-bos]

Each shard K/N is one task: a worker runs ``attnscope heads DIR --prompts P.jsonl --shard K/N
--threads T ... --out PART_K.json`` (the binary from $ATTNSCOPE_BIN, else ``attnscope`` on PATH,
on the worker) with every flag given here, then the driver runs ``attnscope merge PART_1.json ...
--out HEADS.csv``, which checks that the parts are of one model, prompts file and flag set and
tile the prompts. The sums are exact, so the result equals the unsharded run's.

Without --scheduler the shards run on this machine as W attnscope processes at a time (no Dask:
on one machine its scheduler only adds start-up time), N = W shards by default (the model is
loaded once per shard), and each attnscope gets T = cores / W threads, so W x T never exceeds the
cores. With --scheduler ADDRESS the shards are Dask tasks on that cluster's workers, which must
see the same paths (a shared file system); set --threads to each worker machine's cores per
task. --scheduler local starts a dask.distributed LocalCluster of W workers in this process (the
same tasks, for trying the Dask path on one machine). A temporary --work folder is removed at
the end (a given one is kept). Dask is Debian's python3-distributed; nothing is downloaded.
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


def heads_flags(scores="prev,dup,induction,sink,entropy", exclude_bos=False, exclude_current_token=False,
                bos=None, threads=0):
    """The options every shard's `attnscope heads` gets (bos: True --bos, False --no-bos, None the
    tokenizer's rule)."""
    flags = ["--scores", scores, "--threads", str(threads)]
    if exclude_bos:
        flags.append("--exclude-bos")
    if exclude_current_token:
        flags.append("--exclude-current-token")
    if bos is not None:
        flags.append("--bos" if bos else "--no-bos")
    return flags


def run_shard(attnscope, model, prompts, shard, shards, flags, out):
    """One task: `attnscope heads` on shard `shard` of `shards` with `flags`. Returns `out`."""
    command = [attnscope, "heads", model, "--prompts", prompts, "--shard", f"{shard}/{shards}", *flags,
               "--out", out]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SweepError(f"shard {shard}/{shards}: {' '.join(command)} exited {done.returncode}: "
                         f"{done.stderr.strip()}")
    return out


def default_threads(workers):
    """Cores of this machine per worker, at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))


def run_here(tasks, workers):
    """Runs run_shard(*task) for every task, `workers` attnscope processes at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(run_shard, *task) for task in tasks]:
            future.result()  # the first failed shard's SweepError


def run_on_dask(tasks, scheduler, workers):
    """Runs run_shard(*task) for every task as Dask tasks: on the cluster at `scheduler`, or on
    an in-process LocalCluster of `workers` workers for scheduler == "local"."""
    from dask.distributed import Client, LocalCluster  # Debian: python3-distributed

    cluster = None
    if scheduler == "local":
        # threads, not processes: a task only waits for its attnscope process
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        client.gather([client.submit(run_shard, *task, pure=False) for task in tasks])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(prompts, model, out, shards=None, scheduler=None, workers=2, work=None, threads=None,
          scores="prev,dup,induction,sink,entropy", exclude_bos=False, exclude_current_token=False,
          bos=None):
    """Runs the shards (here, or on Dask workers), merges their PART files into `out` (a CSV)."""
    attnscope = binary()
    shards = shards or workers
    if threads is None:
        threads = default_threads(workers) if scheduler in (None, "local") else 0
    flags = heads_flags(scores, exclude_bos, exclude_current_token, bos, threads)
    prompts, model, out = (os.path.abspath(p) for p in (prompts, model, out))
    temporary = work is None
    work = tempfile.mkdtemp(prefix="attnscope_sweep_") if temporary else os.path.abspath(work)
    try:
        os.makedirs(work, exist_ok=True)
        parts = [os.path.join(work, f"part_{k}_of_{shards}.json") for k in range(1, shards + 1)]
        tasks = [(attnscope, model, prompts, k, shards, flags, part) for k, part in zip(range(1, shards + 1), parts)]
        if scheduler is None:
            run_here(tasks, workers)
        else:
            run_on_dask(tasks, scheduler, workers)
        done = subprocess.run([attnscope, "merge", *parts, "--out", out], capture_output=True, text=True)
        if done.returncode != 0:
            raise SweepError(f"attnscope merge exited {done.returncode}: {done.stderr.strip()}")
    finally:
        if temporary:
            shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m attnscope_sweep", description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", required=True, help="P.jsonl, one {\"text\": ...} per line")
    parser.add_argument("--model", required=True, help="the model folder DIR")
    parser.add_argument("--shards", type=int, help="number of shards N (>= 1; default: --workers)")
    parser.add_argument("--out", default="HEADS.csv", help="the merged CSV (default HEADS.csv)")
    parser.add_argument("--scheduler", help="a Dask scheduler address, or 'local' for an in-process "
                             "LocalCluster; default: attnscope processes on this machine, no Dask")
    parser.add_argument("--workers", type=int, default=2,
                        help="shards run at once on this machine, or LocalCluster workers (default 2)")
    parser.add_argument("--threads", type=int,
                        help="threads of each attnscope heads (default: cores / workers on this "
                             "machine, every core of the worker's machine with --scheduler ADDRESS)")
    parser.add_argument("--work", help="folder for the PART files (default: a temporary one, removed)")
    parser.add_argument("--scores", default="prev,dup,induction,sink,entropy")
    parser.add_argument("--exclude-bos", action="store_true", help="as attnscope heads --exclude-bos")
    parser.add_argument("--exclude-current-token", action="store_true",
                        help="as attnscope heads --exclude-current-token")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--bos", dest="bos", action="store_const", const=True, default=None,
                       help="as attnscope heads --bos")
    group.add_argument("--no-bos", dest="bos", action="store_const", const=False, help="as attnscope heads --no-bos")
    args = parser.parse_args(argv)
    if args.shards is not None and args.shards < 1:
        parser.error("--shards must be at least 1")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.threads is not None and not 0 <= args.threads <= 256:
        parser.error("--threads must be 0..256")
    try:
        print(sweep(args.prompts, args.model, args.out, args.shards, args.scheduler, args.workers, args.work,
                    args.threads, args.scores, args.exclude_bos, args.exclude_current_token, args.bos))
    except SweepError as e:
        print(f"attnscope_sweep: {e}", file=sys.stderr)
        return 2
    return 0
