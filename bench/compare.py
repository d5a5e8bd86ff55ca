#!/usr/bin/env python3
"""Merge m40-bench and bench_torch.py JSON files ("m40-bench/1") into one
markdown table per workload and PNG plots of throughput vs batch.

    python3 bench/compare.py RESULT.json... [--out DIR]

Writes DIR/compare.md and DIR/<workload>.png (matplotlib; plots are skipped
with a notice when it is missing) and prints the markdown.
Ours = the m40-bench results that name a baseline (m40_matmul,
m40_tensor_copy); every other implementation is a column to compare with.
"""
import argparse
import collections
import json
import os
import sys


def load(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        if d.get("tool") == "m40-doctor":
            continue
        if d.get("schema") != "m40-bench/1":
            sys.exit(f"{p}: not an m40-bench/1 file")
        d["_path"] = p
        docs.append(d)
    return docs


def fmt(v, unit):
    if v is None:
        return "-"
    return f"{v:,.0f}" if unit == "GFLOP/s" or v >= 100 else f"{v:.1f}"


def label_key(r):
    s = r.get("shape") or {}
    return (r["batch"], s.get("N", 0), s.get("K", 0), r["label"])


def series_key(r):
    s = r.get("shape") or {}
    return f"N={s['N']}, K={s['K']}" if s else ""


def tables(docs):
    by_w = collections.OrderedDict()
    mine, baselines = set(), set()
    for d in docs:
        for r in d["results"]:
            r["_tool"] = d["tool"]
            by_w.setdefault(r["workload"], []).append(r)
            if d["tool"] == "m40-bench":
                mine.add(r["impl"])
                if r.get("baseline"):
                    baselines.add(r["baseline"]["impl"])
    # ours: every m40-bench implementation that is not another one's baseline
    return by_w, mine - baselines


def markdown(docs, by_w, ours):
    out = []
    for d in docs:
        dev, sw = d["device"], d.get("software", {})
        extra = ", ".join(f"{k} {v}" for k, v in sw.items())
        out.append(f"- `{os.path.basename(d['_path'])}`: {d['tool']} `{d['command']}`, {d['date']}, "
                   f"{dev['name']} (cc {dev['cc']}), driver {dev.get('driver') or '?'}; {extra}; "
                   f"{d['options']['warmup']} warm-up + {d['options']['repeats']} repeats, "
                   f"{d['options'].get('timing', '')}")
    out.append("")
    for w, rs in by_w.items():
        impls = sorted({r["impl"] for r in rs}, key=lambda i: (i not in ours, i))
        mine = [i for i in impls if i in ours]
        others = [i for i in impls if i not in ours]
        unit = rs[0]["unit"]
        rows = collections.OrderedDict()
        for r in sorted(rs, key=label_key):
            rows.setdefault(r["label"], {})[r["impl"]] = r
        head = ["shape", "batch"] + [f"{i} ({unit})" for i in impls]
        head += [f"{m} / {o}" for m in mine for o in others]
        head += ["M40 floor (ms)", "% of M40 limit (ours)", "card during ours"]
        out.append(f"### {w}")
        out.append("")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for label, by_impl in rows.items():
            any_r = next(iter(by_impl.values()))
            cells = [label, f"{any_r['batch']:g}"]
            for i in impls:
                r = by_impl.get(i)
                cell = fmt(r["value"], unit) if r else "-"
                if r and r.get("telemetry") and r["telemetry"].get("throttled"):
                    cell += " (throttled)"
                cells.append(cell)
            for m in mine:
                for o in others:
                    a, b = by_impl.get(m), by_impl.get(o)
                    cells.append(f"{a['value'] / b['value']:.2f}x" if a and b and b["value"] else "-")
            cells.append(f"{any_r['m40']['floor_ms']:.4g}")
            r0 = by_impl.get(mine[0]) if mine else None
            cells.append(f"{r0['m40']['pct_of_limit']:.0f}%" + ("" if r0["m40"]["measured_on_m40"]
                                                               else " (not an M40)") if r0 else "-")
            t = r0.get("telemetry") if r0 else None
            if t:
                reasons = ",".join(t["throttle_reasons"]) or "none"
                pw = f", {t['power_w_max']:.0f} W" if t.get("power_w_max") is not None else ""
                cells.append(f"SM {t['sm_mhz_min']}-{t['sm_mhz_max']} MHz, {t['temp_c_max']} C{pw}, "
                             f"{reasons}")
            else:
                cells.append("-")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        f0 = rs[0]["m40"]["formula"]
        out.append(f"M40 floor = work / M40 limit ({rs[0]['m40']['limit']:g} {unit}), e.g. {f0}. "
                   "Percentages of the M40 limit measured on another GPU only show how far that GPU "
                   "is from an M40; they are not M40 figures.")
        out.append("")
    return "\n".join(out)


def plots(by_w, ours, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare.py: matplotlib not installed; no plots", file=sys.stderr)
        return []
    made = []
    for w, rs in by_w.items():
        groups = collections.Counter(series_key(r) for r in rs)
        key = groups.most_common(1)[0][0]  # the batch sweep (e.g. N=K=4096)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        impls = sorted({r["impl"] for r in rs}, key=lambda i: (i not in ours, i))
        for i in impls:
            pts = sorted((r["batch"], r["value"]) for r in rs if r["impl"] == i and series_key(r) == key)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linewidth=2.5 if i in ours else 1.5, label=i)
        unit = rs[0]["unit"]
        limit = rs[0]["m40"]["limit"]
        ax.axhline(limit, color="gray", linestyle="--", linewidth=1,
                   label=f"Tesla M40 limit ({limit:g} {unit})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch (rows M)" if w == "gemm" else "size (MiB)" if w == "copy" else "batch")
        ax.set_ylabel(unit)
        ax.set_title(f"{w}{' ' + key if key else ''}: throughput vs batch")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(outdir, f"{w}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    docs = load(a.files)
    by_w, ours = tables(docs)
    md = markdown(docs, by_w, ours)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "compare.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    for p in plots(by_w, ours, a.out):
        print(f"plot: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
