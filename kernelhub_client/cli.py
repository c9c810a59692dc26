"""`kernelhub`: submit kernels to a KernelHub site and read verdicts and leaderboards (docs/CLIENT.md).

Exit codes, for scripts and agents (the same table is in docs/CLIENT.md):
  0  success; for `submit --wait`, the verdict is accepted
  1  wrong_answer
  2  usage error (bad arguments, no URL or token configured)
  3  compile_error, runtime_error or timeout
  4  rejected (a rule or anti-cheat check refused the solution)
  5  the API answered with an error (HTTP 4xx/5xx after retries)
  6  network error: the site could not be reached
  7  no verdict: the evaluation failed on the runners' side, or --wait gave up
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, TextIO

from kernelhub_client.api import (
    ApiError,
    Client,
    ClientError,
    ConfigError,
    NetworkError,
    WaitTimeout,
    config_path,
    config_write,
    normalize_url,
)

EXIT_OK = 0
EXIT_WRONG_ANSWER = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_REJECTED = 4
EXIT_API_ERROR = 5
EXIT_NETWORK_ERROR = 6
EXIT_NO_VERDICT = 7

VERDICT_EXIT = {
    "accepted": EXIT_OK,
    "wrong_answer": EXIT_WRONG_ANSWER,
    "compile_error": EXIT_FAILED,
    "runtime_error": EXIT_FAILED,
    "timeout": EXIT_FAILED,
    "rejected": EXIT_REJECTED,
}


class Output:
    """Human text on stdout, or with --json exactly one JSON object on stdout; notes go to stderr."""

    def __init__(self, as_json: bool, stdout: TextIO, stderr: TextIO) -> None:
        self.as_json = as_json
        self.stdout = stdout
        self.stderr = stderr

    def result(self, obj: Any, text: str) -> None:
        if self.as_json:
            self.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
        else:
            self.stdout.write(text.rstrip("\n") + "\n")
        self.stdout.flush()

    def note(self, text: str) -> None:
        self.stderr.write(text + "\n")
        self.stderr.flush()

    def error(self, code: str, message: str, extra: dict | None = None) -> None:
        if self.as_json:
            self.stdout.write(json.dumps({"error": {"code": code, "message": message, **(extra or {})}},
                                         sort_keys=True) + "\n")
            self.stdout.flush()
        self.note(f"kernelhub: {message}")


def build_parser() -> argparse.ArgumentParser:
    # Accepted before or after the command (`kernelhub --url U status 3` and `kernelhub status 3 --url U`);
    # SUPPRESS keeps a sub-command's unset default from overwriting the value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS,
                        help="site URL (overrides KERNELHUB_URL and the stored login)")
    common.add_argument("--token", default=argparse.SUPPRESS,
                        help="API token (overrides KERNELHUB_TOKEN and the stored login)")
    common.add_argument("--retries", type=int, default=argparse.SUPPRESS, metavar="N",
                        help="retries on HTTP 429, 5xx and connection failures (default 5)")
    parser = argparse.ArgumentParser(
        prog="kernelhub",
        description="Submit kernels to a KernelHub site and read verdicts and leaderboards.",
        epilog="Exit codes: 0 success/accepted, 1 wrong answer, 2 usage, 3 compile/runtime error or timeout, "
               "4 rejected, 5 API error, 6 network error, 7 no verdict. KERNELHUB_URL and KERNELHUB_TOKEN "
               "override the stored login.",
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[] if name == "login" else [common])
        if json_flag:
            p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
        return p

    p = add("login", "store the site URL and your API token in " + str(config_path()), json_flag=False)
    p.add_argument("--url", dest="login_url", required=True, help="site URL, e.g. https://kernelhub.example")
    p.add_argument("--token", dest="login_token", required=True, help="your API token, or - to read it from stdin")
    p.add_argument("--no-verify", action="store_true", help="store without checking the URL and token")

    p = add("problems", "list the problems")
    p.add_argument("--hardware", metavar="POOL", help="only problems offered on this pool")
    p.add_argument("--level", type=int, choices=[1, 2, 3], help="only this KernelBench level")

    p = add("submit", "submit a solution file (or a CUDA Agent workdir) for a problem")
    p.add_argument("problem", metavar="PROBLEM", help="problem slug, e.g. l1-19-relu; for a workdir, - finds the "
                   "problem from its model.py")
    p.add_argument("file", metavar="FILE", help="solution file (KernelBench format, class ModelNew), a CUDA Agent "
                   "workdir (a directory, .zip or .tar.gz holding model_new.py), a zipped .mlpackage (.zip, ANE "
                   "pools), or - for stdin")
    p.add_argument("--rules", choices=["cuda_agent", "kernelhub"],
                   help="rule set for a workdir (default: the site's, CUDA Agent's own)")
    p.add_argument("--hardware", metavar="POOL", help="hardware pool, e.g. cpu or h200 (default: the site's)")
    p.add_argument("--language", choices=["cpp", "cuda", "triton", "cupy", "coreml"],
                   help="default: detected from the source")
    p.add_argument("--rerun", action="store_true", help="evaluate again even if this exact source was submitted")
    p.add_argument("--wait", action="store_true", help="follow the evaluation until its verdict")
    p.add_argument("--wait-timeout", type=float, default=3600.0, metavar="S",
                   help="give up waiting after S seconds (exit 7; default 3600)")

    p = add("status", "show a submission and its evaluation")
    p.add_argument("id", metavar="ID", type=int, help="submission id")

    p = add("leaderboard", "show the leaderboard")
    p.add_argument("--hardware", metavar="POOL", help="hardware pool (default: the site's)")
    p.add_argument("--level", type=int, choices=[1, 2, 3], help="KernelBench level (default: all)")
    return parser


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = build_parser().parse_args(argv)  # exits 2 on a usage error, as argparse does
    out = Output(getattr(args, "json", False), stdout, stderr)
    try:
        if args.command == "login":
            return cmd_login(args, out)
        with Client.from_config(url=getattr(args, "url", None), token=getattr(args, "token", None),
                                max_retries=max(0, getattr(args, "retries", 5)), on_retry=out.note) as client:
            if args.command == "problems":
                return cmd_problems(client, args, out)
            if args.command == "submit":
                return cmd_submit(client, args, out)
            if args.command == "status":
                return cmd_status(client, args, out)
            if args.command == "leaderboard":
                return cmd_leaderboard(client, args, out)
    except ConfigError as exc:
        out.error("usage", str(exc))
        return EXIT_USAGE
    except ApiError as exc:
        out.error(exc.code, exc.describe(), {"status": exc.status, "fields": exc.fields})
        return EXIT_API_ERROR
    except NetworkError as exc:
        out.error("network", str(exc))
        return EXIT_NETWORK_ERROR
    except ClientError as exc:
        out.error("error", str(exc))
        return EXIT_API_ERROR
    except KeyboardInterrupt:
        out.error("interrupted", "Interrupted.")
        return 130
    raise AssertionError(f"unhandled command {args.command}")  # argparse only lets known commands through


# --- Commands -----------------------------------------------------------------------------------------

def cmd_login(args: argparse.Namespace, out: Output) -> int:
    token = sys.stdin.readline().strip() if args.login_token == "-" else args.login_token.strip()
    if not token:
        raise ConfigError("The token is empty; pass the token that `manage.py create_entrant` printed.")
    url = normalize_url(args.login_url)
    if not args.no_verify:
        # An invalid token is refused (401) even on the public problem list, so this checks both URL and token.
        with Client(url, token, max_retries=1) as client:
            client.problems()
    path = config_write(url=url, token=token)
    out.result({"url": url, "config": str(path)}, f"Logged in to {url}; settings stored in {path} (mode 0600).")
    return EXIT_OK


def cmd_problems(client: Client, args: argparse.Namespace, out: Output) -> int:
    rows = client.problems(hardware=args.hardware, level=args.level)
    lines = [_table(rows, [("slug", "PROBLEM"), ("level", "LEVEL"), ("title", "TITLE"), ("hardware", "HARDWARE")])]
    if not rows:
        lines = ["No problems match." if args.hardware or args.level else "No problems on this site yet."]
    out.result({"problems": rows}, "\n".join(lines))
    return EXIT_OK


def cmd_submit(client: Client, args: argparse.Namespace, out: Output) -> int:
    archive = _read_workdir(args.file, out)
    if archive is not None:
        created = client.submit_workdir(None if args.problem == "-" else args.problem, archive, rules=args.rules,
                                        hardware=args.hardware, rerun=args.rerun)
    else:
        source = _read_source(args.file)
        created = client.submit(args.problem, source, language=args.language, hardware=args.hardware,
                                rerun=args.rerun)
    sub_id = created.get("id")
    if not isinstance(sub_id, int):
        raise ApiError(200, "bad_response", "The site accepted the submission but sent no id; is the client "
                                            "older than the site?")
    if not args.wait:
        what = "Already submitted (same source)" if created.get("duplicate") else "Submitted"
        out.result(created, f"{what} #{sub_id}: {_where(created)}, {created.get('status', 'queued')}.\n"
                            f"Follow it with: kernelhub status {sub_id}, or at {client.url}/submissions/{sub_id}/")
        return EXIT_OK
    if created.get("duplicate"):
        out.note(f"#{sub_id}: the same source was already submitted; following that submission "
                 "(--rerun evaluates it again).")
    progress = Progress(out.stderr, sub_id)
    try:
        final = client.wait(sub_id, timeout=args.wait_timeout, on_update=progress.update)
    except WaitTimeout as exc:
        progress.finish()
        out.error("wait_timeout", str(exc), {"submission": exc.last})
        return EXIT_NO_VERDICT
    progress.finish()
    out.result(final, _summary(final))
    return _exit_for(final)


def cmd_status(client: Client, args: argparse.Namespace, out: Output) -> int:
    data = client.submission(args.id)
    out.result(data, _summary(data) + f"\n  {client.url}/submissions/{args.id}/")
    return EXIT_OK


def cmd_leaderboard(client: Client, args: argparse.Namespace, out: Output) -> int:
    board = client.leaderboard(hardware=args.hardware, level=args.level)
    rows = board["rows"]
    columns = [("rank", "#"), ("entrant", "ENTRANT"), ("kind", "KIND"), ("solved", "SOLVED"), ("attempted", "ATTEMPTED"),
               ("fast_0", "FAST_0"), ("fast_1_vs_eager", "FAST_1 EAGER"),
               ("fast_1_vs_compile", "FAST_1 COMPILE"), ("geomean_speedup_vs_eager", "GEOMEAN EAGER"),
               ("geomean_speedup_vs_compile", "GEOMEAN COMPILE")]
    if board.get("board") == "ane":
        # An ANE pool's board (docs/ANE.md): speedup against Core ML's default conversion, TFLOPS, ANE share.
        columns = [("rank", "#"), ("entrant", "ENTRANT"), ("kind", "KIND"), ("solved", "SOLVED"),
                   ("problems", "PROBLEMS"), ("geomean_speedup_vs_coreml", "GEOMEAN VS COREML"),
                   ("mean_tflops", "TFLOPS"), ("mean_ane_cost_share", "ANE SHARE")]
    scope = f"{board.get('hardware') or 'default pool'}, " + (f"level {board['level']}" if board.get("level")
                                                               else "all levels")
    if board.get("problems") is not None:
        scope += f", {board['problems']} problems"
    text = f"Leaderboard ({scope})\n" + (_table(rows, columns) if rows else "No entries yet.")
    out.result(board, text)
    return EXIT_OK


# --- Helpers -------------------------------------------------------------------------------------------

class Progress:
    """One live line through the stages on a terminal (rewritten with \\r); a plain line per change otherwise."""

    def __init__(self, stream: TextIO, sub_id: Any) -> None:
        self.stream = stream
        self.sub_id = sub_id
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self.last: str | None = None
        self.width = 0

    def update(self, data: dict) -> None:
        label = _stage_label(data.get("status"), data.get("stage"))
        elapsed = int(time.monotonic() - self.started)
        line = f"#{self.sub_id} {_where(data)}: {label}  {elapsed // 60:02d}:{elapsed % 60:02d}"
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = max(self.width, len(line))
            self.stream.flush()
        elif label != self.last:
            self.stream.write(line + "\n")
            self.stream.flush()
        self.last = label

    def finish(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


def _stage_label(status: Any, stage: Any) -> str:
    if status == "done":
        return "done"
    if status == "failed":
        return "failed"
    if status == "running" and stage == "queued":
        return "starting on a runner"
    return {"queued": "queued", "prescreen": "pre-screening the source", "compiling": "compiling",
            "checking": "checking correctness", "timing": "timing"}.get(stage, str(stage or status))


def _where(data: dict) -> str:
    problem = data.get("problem")
    if isinstance(problem, dict):
        problem = problem.get("slug")
    pool = data.get("hardware") or data.get("pool")
    if isinstance(pool, dict):
        pool = pool.get("slug")
    return f"{problem or '?'} on {pool or '?'}"


def _fmt_x(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) else "n/a"


def _summary(data: dict) -> str:
    head = f"#{data.get('id')} {_where(data)}"
    status, verdict = data.get("status"), data.get("verdict")
    if status == "failed":
        return f"{head}: no verdict, the evaluation failed on the runners' side.\n{data.get('message') or ''}"
    if status != "done":
        return f"{head}: {_stage_label(status, data.get('stage'))} (no verdict yet)"
    lines = [f"{head}: {verdict}"]
    if verdict == "accepted":
        runtime = data.get("runtime_us")
        runtime_text = f"{runtime:.1f} us" if isinstance(runtime, (int, float)) else "n/a"
        lines.append(f"  runtime {runtime_text}, {_fmt_x(data.get('speedup_vs_eager'))} vs eager, "
                     f"{_fmt_x(data.get('speedup_vs_compile'))} vs torch.compile")
    if data.get("message"):
        lines.append("  " + str(data["message"]).replace("\n", "\n  "))
    return "\n".join(lines)


def _exit_for(data: dict) -> int:
    if data.get("status") != "done":
        return EXIT_NO_VERDICT
    return VERDICT_EXIT.get(str(data.get("verdict")), EXIT_NO_VERDICT)


# What a packed workdir keeps: sources as text (the site builds the extension itself), never build outputs.
WORKDIR_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".txt", ".md", ".sh")
WORKDIR_SKIPPED_DIRS = {"build", "__pycache__", ".git", ".ipynb_checkpoints"}


def _read_workdir(name: str, out: Output) -> bytes | None:
    """A CUDA Agent workdir as the archive to upload: a directory is zipped (sources only), a .tar.gz or .tgz is
    sent as it is, a .zip holding model_new.py too; None for anything else (a solution file, a Core ML zip)."""
    if name == "-":
        return None
    path = Path(name)
    try:
        if path.is_dir():
            return _pack_directory(path, out)
        lower = path.name.lower()
        if lower.endswith((".tar.gz", ".tgz")):
            return path.read_bytes()
        if lower.endswith(".zip"):
            data = path.read_bytes()
            try:
                names = zipfile.ZipFile(io.BytesIO(data)).namelist()
            except zipfile.BadZipFile:
                return None
            if any(n == "model_new.py" or n.count("/") == 1 and n.endswith("/model_new.py") for n in names):
                return data
    except OSError as exc:
        raise ConfigError(f"Cannot read {name}: {exc.strerror}") from None
    return None


def _pack_directory(root: Path, out: Output) -> bytes:
    if not (root / "model_new.py").is_file():
        raise ConfigError(f"{root} has no model_new.py: a CUDA Agent workdir holds model.py, model_new.py, "
                          "binding.cpp, binding_registry.h and kernels/ (docs/CLIENT.md).")
    buffer = io.BytesIO()
    skipped: list[str] = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            for d in sorted(dirnames):
                if d in WORKDIR_SKIPPED_DIRS or d.startswith(".") or (here / d).is_symlink():
                    dirnames.remove(d)
                    skipped.append((here / d).relative_to(root).as_posix() + "/")
            dirnames.sort()
            for fname in sorted(filenames):
                full = here / fname
                rel = full.relative_to(root).as_posix()
                if full.is_symlink() or fname.startswith(".") or not fname.endswith(WORKDIR_SUFFIXES):
                    skipped.append(rel)
                    continue
                info = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, full.read_bytes())
    if skipped:
        out.note(f"kernelhub: left out of the workdir (not sources): {', '.join(skipped[:10])}"
                 + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""))
    return buffer.getvalue()


def _read_source(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    path = Path(name)
    try:
        if path.suffix.lower() == ".zip":
            # A zipped Core ML .mlpackage (an ANE pool): the site takes it as `base64:<zip>`.
            return "base64:" + base64.b64encode(path.read_bytes()).decode("ascii")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"No such file: {name}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name} is not UTF-8 text; submit the Python source of your solution.") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read {name}: {exc.strerror}") from None


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return str(value.get("slug") or value.get("name") or value)
    return str(value)


def _table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    cells = [[_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max([len(title)] + [len(r[i]) for r in cells]) for i, (_, title) in enumerate(columns)]
    lines = ["  ".join(title.ljust(w) for (_, title), w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
