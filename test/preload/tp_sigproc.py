"""CPython's signal handling under libppl: a handler that raises, run by
signal.setitimer while another thread exists, must interrupt the main
thread's blocking call after the timer's 0.3 s, as it does natively.
CPython's locks are semaphores (sem_wait, sem_clockwait) and its sleep is
clock_nanosleep: libppl ran the C-level handler on whichever VP the kernel
chose, so lock.acquire() and thread.join() hung and the timed calls
returned only when they timed out."""
import os
import signal
import sys
import threading
import time


class Interrupted(Exception):
    pass


def handler(signum, frame):
    raise Interrupted()


def case(name, fn):
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        fn()
        result = "returned"
    except Interrupted:
        result = "interrupted"
    took = time.monotonic() - t0
    signal.setitimer(signal.ITIMER_REAL, 0)
    ok = result == "interrupted" and took < 2.5   # the calls wait 3 s
    print(f"{name}: {result} after {took:.2f} s{'' if ok else ' FAIL'}", flush=True)
    return ok


def main():
    signal.signal(signal.SIGALRM, handler)
    # Bounded whatever happens.
    watchdog = threading.Timer(20, lambda: (print("timed out", flush=True), os._exit(1)))
    watchdog.daemon = True
    watchdog.start()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    held = threading.Lock()
    held.acquire()
    event = threading.Event()
    joinee = threading.Thread(target=stop.wait)   # ends at the end
    joinee.start()
    oks = [
        case("lock.acquire()", held.acquire),
        case("lock.acquire(timeout=3)", lambda: held.acquire(timeout=3)),
        case("time.sleep(3)", lambda: time.sleep(3)),
        case("event.wait(3)", lambda: event.wait(3)),
        case("thread.join()", joinee.join),
    ]
    stop.set()
    other.join()
    joinee.join()
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
