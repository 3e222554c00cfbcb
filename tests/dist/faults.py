"""A rank that dies or hangs stops the others with a DistError naming it, within the timeout
(dist/watchdog.h, Note [Timeouts and the watchdog]).

usage: faults.py MPIRUN FAULT_WORKER kill|stop

kill: rank 1 raises SIGKILL. Under plain mpirun the job would be ended by mpirun itself; with
--enable-recovery mpirun lets rank 0 run on, so it is Ember's deadline that must end it.
stop: rank 1 raises SIGSTOP (alive, never answering) under plain mpirun.
"""
import os
import subprocess
import sys
import time

TIMEOUT_S = 10


def main():
    mpirun, worker, mode = sys.argv[1:4]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    cmd = [mpirun, "--oversubscribe", "-np", "2"]
    if mode == "kill":
        cmd.append("--enable-recovery")
    cmd += [worker, mode, "20", str(TIMEOUT_S)]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    elapsed = time.monotonic() - start
    out = r.stdout + r.stderr
    print(out)
    print(f"{mode}: the job ended after {elapsed:.1f} s (timeout {TIMEOUT_S} s)")
    caught = [line for line in out.splitlines() if line.startswith("rank 0: caught DistError")]
    assert "rank 1: raising" in out, "rank 1 never reached the failure"
    assert caught, "rank 0 did not stop with a DistError"
    line = caught[0]
    assert f"timed out after {TIMEOUT_S} s on rank 0 of 2" in line, line
    assert "rank 1 stopped answering" in line, line
    assert "finished without a failure" not in out
    print(f"{mode}: PASSED: rank 0 named rank 1")


if __name__ == "__main__":
    main()
