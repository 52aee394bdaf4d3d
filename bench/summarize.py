"""The table of bench/run.sh: medians over the rounds of each proxy, the spread of its CPU figure,
its memory, and the relay's ratios to its peers. Reads the run's raw rows:

    run   ROUND NAME RPS P50_US P99_US CPU_US_PER_REQ USER_US_PER_REQ NON2XX
    rss   NAME KIB                       (resident memory at start, every process of the proxy)
    idle  NAME BYTES_PER_CONNECTION ANSWERED COUNT [MODE UPSTREAM_CONNECTIONS [HELD]]
                                         (MODE: sequential or burst; the upstream connections the
                                         proxy held once the connections were idle; HELD: the
                                         client connections it still held, which the bytes are
                                         divided by)

    python3 bench/summarize.py RAW_FILE
"""
import statistics
import sys

runs, rss, idle = {}, {}, {}
for line in open(sys.argv[1]):
    kind, *fields = line.split()
    if kind == "run":
        _, name, rps, p50, p99, cpu, user, bad = fields
        runs.setdefault(name, []).append((float(rps), float(p50), float(p99), float(cpu), float(user), int(bad)))
    elif kind == "rss":
        rss.setdefault(fields[0], int(fields[1]))  # at the first start (a burst restarts the proxy)
    elif kind == "idle":
        mode = fields[4] if len(fields) > 4 else "sequential"
        upstream = fields[5] if len(fields) > 5 else "–"
        kept = fields[6] if len(fields) > 6 else "?"
        idle.setdefault(fields[0], {})[mode] = (int(fields[1]), int(fields[2]), int(fields[3]), upstream, kept)


def held(name, mode):
    """Memory per idle connection, and the upstream connections held, for one idle measure."""
    if mode not in idle.get(name, {}):
        return "–", "–"
    per, answered, count, upstream, kept = idle[name][mode]
    note = []
    if answered != count:
        note.append(f"partial: {answered}/{count} answered")
    if kept != str(count):
        note.append(f"per {kept} connections it still held")
    return f"{per / 1024:.2f} KiB" + (f" ({', '.join(note)})" if note else ""), upstream


median = {}
print("| proxy | requests/s | p50 ms | p99 ms | CPU µs/request (min–max) | of it user | RSS at start "
      "| per idle connection | after a burst | upstream connections after it |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, rows in runs.items():
    rps, p50, p99, cpu, user = (statistics.median(row[i] for row in rows) for i in range(5))
    median[name] = (rps, p99, cpu, user)
    cpus = [row[3] for row in rows]
    bad = sum(row[5] for row in rows)
    start = f"{rss[name] / 1024:.1f} MiB" if name in rss else "–"
    sequential, _ = held(name, "sequential")
    burst, upstream = held(name, "burst")
    print(f"| {name} | {rps:.0f} | {p50 / 1000:.2f} | {p99 / 1000:.2f} | {cpu:.1f} ({min(cpus):.1f}–{max(cpus):.1f}) "
          f"| {user:.1f} | {start} | {sequential} | {burst} | {upstream} |" + (f" {bad} non-2xx" if bad else ""))

for relay in (name for name in median if name.startswith("relay")):
    r = median[relay]
    ratios = []
    for peer in ("nginx", "haproxy", "h2o", "baseline"):
        if peer in median:
            p = median[peer]
            ratios.append(f"/{peer}: CPU {r[2] / p[2]:.2f}, user {r[3] / p[3]:.2f}, p99 {r[1] / p[1]:.2f}, rps {r[0] / p[0]:.2f}")
    if ratios:
        print(f"{relay}" + ";  ".join(ratios))
