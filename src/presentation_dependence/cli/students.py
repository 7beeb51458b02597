"""``presdep student ACTION``: the shipped students (students/, docs/MODELS.md).

presdep student list                       every shipped student, its dtype and sha256
presdep student show NAME                  its manifest (student.json)
presdep student verify [NAME ...] [--against-archive]
    recompute each adapter's sha256 against its manifest; re-score its archived presentations
presdep student export RUN_DIR --name NAME [--to students] [--tolerance 0.01]
    publish a finished training folder as a shipped student (adapter, manifest, card)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from presentation_dependence.cli.common import EXIT_GATE_FAIL, EXIT_OK, Subparsers, command

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    st = sub.add_parser(
        "student",
        help="the shipped students: list, show, verify, export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = st.add_subparsers(
        dest="student_action", required=True, help="presdep student ACTION -h for its flags"
    )
    command(actions, "list", _cmd_list, "every shipped student")
    sh = command(actions, "show", _cmd_show, "a shipped student's manifest")
    sh.add_argument("name", help="the student's name (presdep student list)")
    v = command(actions, "verify", _cmd_verify, "check adapters against their recorded sha256")
    v.add_argument("names", nargs="*", help="students to check (default: every one)")
    v.add_argument(
        "--against-archive",
        action="store_true",
        help="also re-score each student's archived presentations listed in --checks and "
        "compare (exit 1 when one differs beyond its rule)",
    )
    v.add_argument(
        "--checks",
        default="students/checks.yaml",
        help="the re-score checks (default students/checks.yaml)",
    )
    e = command(actions, "export", _cmd_export, "publish a finished training folder")
    e.add_argument("run_dir", help="a training output_dir holding adapter/ (presdep train)")
    e.add_argument("--name", required=True, help="the student's name (students/NAME)")
    e.add_argument("--to", default="students", help="the students folder (default students)")
    e.add_argument("--description", default="", help="one line for the card")
    e.add_argument(
        "--tolerance",
        type=float,
        default=0.01,
        help="largest |ΔE[g]| a smaller stored dtype may cause (default 0.01)",
    )
    e.add_argument(
        "--check-queries", type=int, default=3, help="test queries the dtype check scores"
    )


def _cmd_list(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.readout.students import list_students, read_manifest

    for name, folder in list_students().items():
        s = read_manifest(folder)
        sys.stdout.write(
            f"{name}\t{s.stored_dtype}\t{s.adapter_sha256[:16]}\t{s.description}" + "\n"
        )
    return EXIT_OK


def _cmd_show(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.readout.students import find_student, read_manifest

    sys.stdout.write(json.dumps(read_manifest(find_student(args.name)).to_json(), indent=2) + "\n")
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.readout.students import find_student, list_students, verify_student

    names = args.names or list(list_students())
    for name in names:
        s = verify_student(find_student(name))
        sys.stdout.write(f"{name}: sha256 {s.adapter_sha256[:16]}… matches" + "\n")
    if not args.against_archive:
        return EXIT_OK
    from presentation_dependence.robustness.verify import load_checks, run_check

    failed = 0
    for check in load_checks(args.checks):
        if check.student in names:
            result = run_check(check)
            failed += not result.ok
            sys.stdout.write(f"{check.student}: {result.line()}\n")
    return EXIT_GATE_FAIL if failed else EXIT_OK


def _cmd_export(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.training.export import export_student

    s = export_student(
        args.run_dir,
        args.name,
        dest_root=args.to,
        description=args.description,
        tolerance=args.tolerance,
        check_queries=args.check_queries,
    )
    sys.stdout.write(f"{args.to}/{s.name}" + "\n")
    return EXIT_OK
