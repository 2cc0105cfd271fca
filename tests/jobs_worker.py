"""A worker process to kill (tests/test_jobs_workers.py): a zygote that imports memdb once,
then forks one worker per line "fork" read from stdin and prints its pid.

Handler ``test.kill``: writes its effect row through the job's transaction, then sleeps
30 ms (so a SIGKILL often lands after the write, before the commit); it prints
"in <pid>" once written. Forking from this
single-threaded process spares each worker the second of importing memdb."""

from __future__ import annotations

import os
import signal
import sys
import time

from memdb.families.jobs import Registry, Worker

DSN = sys.argv[1]
registry = Registry()


@registry.handler("test.kill")
def kill_me(ctx):
    ctx.conn.execute("INSERT INTO public.job_effects VALUES (%s, %s, 'kill')",
                     (ctx.job.tenant, ctx.job.id))
    print(f"in {os.getpid()}", flush=True)  # written, not committed: a good time to die
    time.sleep(0.03)
    return {"pid": os.getpid()}


def main() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "fork":
            continue
        pid = os.fork()
        if pid == 0:
            Worker(DSN, handlers=registry, lease=0.3, poll_interval=0.05,
                   backoff=0).run()
            os._exit(0)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
