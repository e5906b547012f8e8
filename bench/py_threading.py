"""bench/py_threading.py WORKLOAD [N [ROUNDS]]: CPython's threading module, timed
inside the interpreter (start-up excluded), for bench/run.  Prints one line
"py-WORKLOAD MS ms": the median of
ROUNDS runs (default 5) of the workload in one interpreter.  Run with Debian's /usr/bin/python3 natively and
with libppl preloaded: CPython creates its threads with
PTHREAD_SCOPE_SYSTEM (docs/scheduling.md).

  queue  N items through a queue.Queue, 8 producers and 8 consumers (16 threads)
  cond   N round trips of a token between two threads on one Condition
  pool   N small tasks through a ThreadPoolExecutor of 8 workers
"""
import concurrent.futures
import queue
import statistics
import sys
import threading
import time


def bench_queue(n):
    q = queue.Queue()
    producers, consumers = 8, 8
    per = n // producers

    def produce():
        for i in range(per):
            q.put(i)

    def consume(out):
        s = 0
        while True:
            v = q.get()
            if v is None:
                break
            s += 1
        out.append(s)

    got = []
    threads = [threading.Thread(target=consume, args=(got,)) for _ in range(consumers)]
    threads += [threading.Thread(target=produce) for _ in range(producers)]
    for t in threads:
        t.start()
    for t in threads[consumers:]:
        t.join()
    for _ in range(consumers):
        q.put(None)
    for t in threads[:consumers]:
        t.join()
    assert sum(got) == per * producers


def bench_cond(n):
    c = threading.Condition()
    state = {"turn": 0, "left": n}

    def player(me):
        with c:
            while True:
                while state["turn"] != me and state["left"] > 0:
                    c.wait()
                if state["left"] <= 0:
                    c.notify()
                    return
                state["left"] -= me
                state["turn"] = 1 - me
                c.notify()

    a = threading.Thread(target=player, args=(0,))
    b = threading.Thread(target=player, args=(1,))
    a.start()
    b.start()
    a.join()
    b.join()


def bench_pool(n):
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        total = sum(ex.map(lambda x: x * x, range(n), chunksize=1))
    assert total == sum(x * x for x in range(n))


WORKLOADS = {"queue": (bench_queue, 10000), "cond": (bench_cond, 10000), "pool": (bench_pool, 10000)}

if __name__ == "__main__":
    fn, n = WORKLOADS[sys.argv[1]]
    if len(sys.argv) > 2:
        n = int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(n)
        times.append((time.perf_counter() - t0) * 1000)
    print("py-%s %.3f ms rounds=%d" % (sys.argv[1], statistics.median(times), rounds))
