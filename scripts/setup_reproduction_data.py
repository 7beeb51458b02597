"""Plan and materialise the data of a reproduction task.

    python scripts/setup_reproduction_data.py plan --task passage-reranking    # read-only
    python scripts/setup_reproduction_data.py run  --task passage-reranking    # materialise

``plan`` changes nothing: per collection it prints the status (ready, offline, fetch, blocked,
skip), the route, what the declared route needs (network, Java, gated access, manual steps),
what is missing on this machine now, the declared first stage and the licence. ``run``
materialises every row it can into data/<data_dir>/ (first-stage run, fixture.jsonl,
dataset_meta.yaml) and skips gated, manual and blocked rows with the reason. Exit status: 0
when nothing failed (skips are not failures), 1 when a materialisation failed, 2 on bad input.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import PresdepError
from presentation_dependence.reproduction.materialise import materialise
from presentation_dependence.reproduction.plan import Environment, format_plan, make_plan
from presentation_dependence.reproduction.populations import load_population
from presentation_dependence.reproduction.tasks import load_task

log = logging.getLogger("presentation_dependence.scripts.setup_reproduction_data")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("action", choices=["plan", "run"])
    p.add_argument("--task", required=True, help="configs/reproduction/tasks/<task>.yaml")
    p.add_argument("--collections", help="comma-separated ids or aliases (default: the task's)")
    p.add_argument("--data-root", default="data", help="where collections are materialised")
    p.add_argument("--no-probe", action="store_true", help="do not open network connections")
    p.add_argument("--json", action="store_true", help="plan: print JSON instead of a table")
    p.add_argument("--force", action="store_true", help="run: rebuild materialised collections")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        task = load_task(args.task)
        population = load_population(task.population)
        keys = args.collections.split(",") if args.collections else task.collections or None
        env = Environment(probe_network=not args.no_probe)
        rows = make_plan(population, data_root=args.data_root, env=env, collections=keys)
    except PresdepError as e:
        log.error("%s", e)
        return 2
    if args.action == "plan":
        sys.stdout.write(format_plan(rows, env=env, as_json=args.json))
        return 0
    cmd = ["python", "scripts/setup_reproduction_data.py", *argv]
    outcomes = [materialise(r, data_root=args.data_root, force=args.force, argv=cmd) for r in rows]
    width = max(len(o.collection) for o in outcomes)
    for o in outcomes:
        print(f"{o.collection.ljust(width)}  {o.result:<7}  {o.detail}")
    failed = [o.collection for o in outcomes if o.result == "failed"]
    done = sum(o.result == "done" for o in outcomes)
    print(
        f"\n{done} materialised, {len(outcomes) - done - len(failed)} skipped, {len(failed)} failed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
