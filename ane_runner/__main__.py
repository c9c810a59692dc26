"""python -m ane_runner validate | weights | serve"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from gpu_runner import config


def _quiet_coremltools() -> None:
    # coremltools prints progress bars and a torch-version notice on every conversion; the JSON goes to stdout.
    os.environ.setdefault("TQDM_DISABLE", "1")
    warnings.filterwarnings("ignore", module="coremltools")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ane_runner")
    sub = parser.add_subparsers(dest="cmd", required=True)

    v = sub.add_parser("validate", help="check a solution package or builder against the ANE's rules (Linux)")
    v.add_argument("--problem", required=True, type=Path, help="the problem's Python file")
    v.add_argument("--solution", required=True, type=Path, help="a zipped .mlpackage or a Python builder")
    v.add_argument("--json", action="store_true", help="print the report as one JSON object")
    v.add_argument("--no-baseline", action="store_true", help="skip converting the reference model")
    v.add_argument("--out-package", type=Path, help="write the solution's zipped package here")
    v.add_argument("--out-baseline", type=Path, help="write the baseline's zipped package here")

    w = sub.add_parser("weights", help="write the reference weights (.npz) a package must embed")
    w.add_argument("--problem", required=True, type=Path)
    w.add_argument("--out", required=True, type=Path)

    s = sub.add_parser("serve", help="run this Mac as an ANE runner (macOS only)")
    s.add_argument("--site", required=True, help="the site's base URL, e.g. https://kernelhub.example")
    s.add_argument("--token", default=config.setting("runner_token") or None,
                   help="the runner's secret (or KERNELHUB_RUNNER_TOKEN)")

    args = parser.parse_args(argv)
    _quiet_coremltools()
    if args.cmd == "validate":
        return _validate(args)
    if args.cmd == "weights":
        from .problem import ProblemError, problem_load, weights_npz_bytes

        try:
            args.out.write_bytes(weights_npz_bytes(problem_load(_read_text(args.problem))))
        except ProblemError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.out}")
        return 0
    try:
        from .worker import serve  # reads the worker's settings (gpu_runner/config.py)
    except config.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.token:
        print("error: give --token or set KERNELHUB_RUNNER_TOKEN (the secret shown when the runner was "
              "registered)", file=sys.stderr)
        return 2
    return serve(site=args.site, token=args.token)


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror}", file=sys.stderr)
        raise SystemExit(2) from exc


def _validate(args: argparse.Namespace) -> int:
    from .problem import ProblemError
    from .validate import validate

    try:
        solution = args.solution.read_bytes()
    except OSError as exc:
        print(f"error: cannot read {args.solution}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        report, package, baseline = validate(_read_text(args.problem), solution, solution_name=args.solution.name,
                                             baseline=not args.no_baseline)
    except ProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out_package and package is not None:
        args.out_package.write_bytes(package)
    if args.out_baseline and baseline is not None:
        args.out_baseline.write_bytes(baseline)
    if args.json:
        print(json.dumps(report))
    else:
        print("eligible" if report["eligible"] else "NOT eligible")
        print(f"ops: {report['ops']}\nflops: {report['flops']} (dense {report['flops_dense']})")
        print(f"reference digest: {report['reference']['digest']}")
        for i in report["issues"]:
            print(f"  [{i['rule']}] {i['op'] or '-'}: {i['detail']}")
    return 0 if report["eligible"] else 1


if __name__ == "__main__":
    sys.exit(main())
