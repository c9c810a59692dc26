"""`python -m gpu_runner evaluate --problem P.py --solution S.py|DIR|ARCHIVE [--device cpu|cuda] [--seed N] [--json]`
and `python -m gpu_runner serve ...` (the Celery runner, gpu_runner/worker.py).

With --json, stdout carries exactly one JSON object and every log goes to stderr. Exit status 0 whenever a
verdict was reached; 2 for usage errors (bad arguments, unreadable or malformed problem); 3 for a failure of
the evaluator itself.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any


def _finite(value: Any) -> Any:
    """JSON has no NaN or Infinity: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _human(result: dict[str, Any]) -> str:
    lines = [f"verdict: {result['verdict']}"]
    if result.get("message"):
        lines.append(f"message: {result['message']}")
    for key in ("runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile"):
        if result.get(key) is not None:
            lines.append(f"{key}: {result[key]:.4g}")
    lines.append(f"language: {result['language']}, wall: {result['wall_s']} s")
    return "\n".join(lines)


def _evaluate(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_runner evaluate",
                                     description="Check and time one solution against one problem.")
    parser.add_argument("--problem", required=True, type=Path, help="problem file (KernelBench format)")
    parser.add_argument("--solution", required=True, type=Path,
                        help="solution file defining ModelNew, or a CUDA Agent workdir (a directory, .zip, .tar.gz)")
    parser.add_argument("--rules", choices=("kernelhub", "cuda_agent"), default="cuda_agent",
                        help="rule set for a workdir (default cuda_agent; a problem's KERNELHUB['rules'] wins)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed of the correctness trials (default 0)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        problem = args.problem.read_text()
        solution = _read_workdir(args.solution, problem, args.rules) if _is_workdir(args.solution) \
            else args.solution.read_text()
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: cannot read {e.filename if isinstance(e, OSError) else 'a file'}: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # gpu_runner.workdir.WorkdirError: the workdir is refused
        print(f"error: the workdir {args.solution}: {e}", file=sys.stderr)
        return 2
    if args.seed < 0:
        print("error: --seed must be a non-negative integer", file=sys.stderr)
        return 2
    from gpu_runner.config import ConfigError, RunnerConfig

    try:
        settings = RunnerConfig.from_env()  # the evaluation's settings, read once (gpu_runner/config.py)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Logs of everything below (including torch) go to stderr; stdout is kept for the one JSON object.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    failure: tuple[str, str] | None = None  # (kind, message) where no verdict was reached
    try:
        from gpu_runner.evaluate import EvaluatorError, evaluate
        from gpu_runner.formats import FormatError

        try:
            result = evaluate(problem, solution, device=args.device, seed=args.seed, settings=settings)
        except FormatError as e:
            print(f"error: the problem file {args.problem}: {e}", file=sys.stderr)
            return 2
        except EvaluatorError as e:
            failure = ("evaluator_error", f"the evaluator failed: {e}")
            print(f"error: {failure[1]}", file=sys.stderr)
        except Exception:  # noqa: BLE001 - a bug of ours: say so, with the traceback, and exit non-zero
            import traceback

            traceback.print_exc()
            failure = ("internal", "internal failure of the evaluator (traceback on stderr); please report it")
            print(f"error: {failure[1]}", file=sys.stderr)
    finally:
        sys.stdout = real_stdout
    if failure is not None:
        if args.json:
            # Still exactly one JSON object: no verdict, and why (the full story is on stderr).
            print(json.dumps({"verdict": None, "error": {"kind": failure[0], "message": failure[1][:4000]}}))
        return 3
    if args.json:
        print(json.dumps(_finite(result), sort_keys=True))
    else:
        print(_human(result))
    return 0


def _is_workdir(path: Path) -> bool:
    from gpu_runner.workdir import looks_like_archive_name

    return path.is_dir() or looks_like_archive_name(path.name)


def _read_workdir(path: Path, problem: str, rules: str) -> str:
    """A CUDA Agent workdir as the evaluator's solution text (gpu_runner/workdir.py); its model.py must be the
    problem given with --problem."""
    from gpu_runner import workdir

    wd = workdir.read_path(path, rules=rules)
    if wd.model_py is not None and not workdir.same_problem(wd.model_py, problem):
        raise workdir.WorkdirError("its model.py differs from the --problem file: the workdir was made for another "
                                   "problem (or an edited one); evaluate it against its own model.py")
    if wd.skipped:
        print(f"kernelhub: left out of the workdir (not sources): {', '.join(wd.skipped[:10])}", file=sys.stderr)
    return wd.to_bundle()


def _serve(argv: list[str]) -> int:
    from gpu_runner.config import ConfigError

    try:
        from gpu_runner.worker import serve_main
    except ConfigError as e:  # the worker reads its settings as it is imported
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"error: the runner worker is not available ({e}); gpu_runner/worker.py provides `serve`",
              file=sys.stderr)
        return 2
    return int(serve_main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"evaluate": _evaluate, "serve": _serve}
    if not argv or argv[0] not in commands:
        print("usage: python -m gpu_runner {evaluate,serve} ...\n"
              "  evaluate --problem P.py --solution S.py|WORKDIR [--device cpu|cuda] [--seed N] [--json]\n"
              "  serve ...   run the Celery runner (see gpu_runner/worker.py)", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
