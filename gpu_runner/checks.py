"""The solution's correctness trials (`trials`): the reference's seeds, fresh inputs, memory poisoned before each
call, every output compared with the reference's within the problem's tolerances, the output's form checked, the
inputs left as they were, then the precision rule against the float64 runs (precision.py). `compare`,
`structure_problems` and `read` serve the checks made during the timing too.
"""

from __future__ import annotations

from typing import Any

from gpu_runner import correctness, precision
from gpu_runner.context import Context
from gpu_runner.protocol import ProtocolError
from gpu_runner.reference import Reference
from gpu_runner.session import Session, Verdict, untrusted


def compare(ctx: Context, expected: list[Any], got: list[Any], where: str) -> correctness.Comparison:
    """Outputs against the expected ones within the problem's tolerances; the largest errors go on record."""
    cmp = correctness.compare(expected, got, ctx.meta, ctx.device)
    checks = ctx.result.checks
    checks["max_abs_err"] = max(checks.get("max_abs_err", 0.0), cmp.max_abs_err)
    checks["max_rel_fro_err"] = max(checks.get("max_rel_fro_err", 0.0), cmp.rel_fro_err)
    if not cmp.ok:
        raise Verdict("wrong_answer", f"{where}: {cmp.message}")
    return cmp


def structure_problems(reply: dict[str, Any], where: str) -> None:
    """What the child found wrong with its own output's form (aliasing, not a plain tensor, changed later)."""
    problems = reply.get("problems")
    if not isinstance(problems, list):
        raise Verdict("runtime_error", f"{where}: malformed reply from the evaluation process")
    if problems:
        text = "; ".join(str(p)[:300] for p in problems[:3])
        rule = "output_aliases_input" if "shares memory" in text else "output_not_plain_tensor"
        if "changed after forward returned" in text:
            rule = "output_changed_after_return"
        raise Verdict("rejected", f"rule {rule} broken, {where}: {text}", rule)


def read(sol: Session, name: Any, where: str) -> list[Any]:
    """The outputs the solution saved as `name`; one that cannot be read is a runtime error."""
    try:
        return sol.tensors(name)
    except ProtocolError as e:
        raise Verdict("runtime_error", f"{where}: the output could not be read ({e})") from None


def trials(ctx: Context, ref: Reference, sol: Session) -> None:
    """The solution's correctness trials: the reference's seeds, compared with its outputs, then the precision rule."""
    check = precision.Check(ctx.meta)
    for i, s in enumerate(ref.trial_seeds):
        where = f"trial {i + 1} of {len(ref.trial_seeds)} (seed {s})"
        reply = untrusted(sol, "trial", where, seed=s, file=f"trial_{i}.pt", poison_bytes=ref.poison_bytes())
        structure_problems(reply, where)
        if reply.get("structure") != ref.structure:
            raise Verdict("wrong_answer", f"{where}: the output is {reply.get('structure')}, the reference's "
                                          f"is {ref.structure}")
        got = read(sol, f"trial_{i}.pt", where)
        (sol.workdir / f"trial_{i}.pt").unlink(missing_ok=True)
        expected = ref.expected_trial(i)
        compare(ctx, expected, got, where)
        check.add(expected, ref.ground_truth[i], got, ref.sample_seeds[i])
        if ref.expected_mode == "on_demand":
            ref.expected[i] = None  # at most one trial's expected outputs held at a time
        del expected
        del got
        changed = reply.get("changed_inputs")
        if changed and not ref.changes_inputs:
            # Timed calls reuse their input sets, so the next call would see changed inputs. (Copies for every
            # call would also warm the caches before the timer starts.) A solution that hides the change only
            # fails the checks of later calls instead.
            raise Verdict("rejected", f"rule input_changed broken, {where}: forward changed input(s) "
                          f"{changed} in place, which the reference leaves unchanged; write the results to new "
                          "tensors and leave the inputs as they were", "input_changed")
    _precision(ctx, ref, check)
    ctx.trials_passed = True


def _precision(ctx: Context, ref: Reference, check: precision.Check) -> None:
    """The precision rule (precision.py), on the trials that had a float64 run; its figures in the result."""
    outcome = check.outcome()
    checked = sum(t is not None for t in ref.ground_truth)
    if outcome is None:
        notes = sorted(set(ref.fp64_notes)) or ["no float32 output"]
        ctx.result.checks["precision"] = {"rule": check.level, "checked": False,
                                          "note": "; ".join(notes)[:500]}
        return
    figures = {**outcome.figures, "checked": True, "trials": checked}
    if ref.fp64_notes:
        figures["note"] = f"{len(ref.fp64_notes)} trial(s) without a float64 run: {ref.fp64_notes[0][:300]}"
    ctx.result.checks["precision"] = figures
    if not outcome.ok:
        raise Verdict("wrong_answer", f"trials: {outcome.message}", precision.RULE)
