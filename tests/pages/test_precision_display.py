import pytest

from apps.submissions.models import Evaluation, Problem


@pytest.mark.django_db
def test_it_says_which_precision_a_problem_requires(client, problem):
    html = client.get(f"/problems/{problem.slug}/").content.decode()
    assert 'data-level="fp32">float32</span>' in html
    assert "compute in float32 (no TF32, float16 or bfloat16" in html

    Problem.objects.filter(pk=problem.pk).update(
        source=problem.source.replace('"level": 1,', '"level": 1, "precision": "bf16",', 1))
    html = client.get(f"/problems/{problem.slug}/").content.decode()
    assert 'data-level="bf16">bfloat16 allowed</span>' in html


@pytest.mark.django_db
def test_it_shows_the_precision_figures_of_an_evaluation(client, alice_submission):
    figures = {"rule": "fp32", "checked": True, "trials": 5, "error_vs_fp64": 9.1e-05,
               "reference_error_vs_fp64": 1.2e-07, "ratio": 758.3, "bound": 5.7e-06, "of_bound": 16.0,
               "multiple": 16.0, "floor": 3.8e-06, "elements": 81920, "sampled": False}
    Evaluation.objects.filter(submission=alice_submission).update(
        status="done", stage="done", verdict="wrong_answer", correct=False,
        result={"verdict": "wrong_answer", "checks": {"precision": figures}})
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    card = html[html.index('id="precision-check"'):]
    card = card[: card.index("</section>")]
    assert "float64 run of the reference: <strong>9.1e-05</strong>" in card
    assert "float32 reference's own: 1.2e-07 (758x)" in card
    assert "Bound: 5.7e-06, <strong>over it</strong>" in card
    assert "over 5 trials" in card
    # And among the correctness checks of "How this was checked".
    checked = html[html.index('data-section="correctness"'):]
    checked = checked[: checked.index("</section>")]
    assert "<tr><th>Precision required</th><td>fp32</td></tr>" in checked
    assert "<tr><th>Error against float64</th><td>9.1e-05</td></tr>" in checked

    figures.update({"error_vs_fp64": 2.0e-07, "of_bound": 0.035})
    Evaluation.objects.filter(submission=alice_submission).update(
        verdict="accepted", correct=True, result={"verdict": "accepted", "checks": {"precision": figures}})
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert "within it (0.035 of it)" in html


@pytest.mark.django_db
def test_it_says_when_precision_was_not_checked(client, alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(
        status="done", stage="done", verdict="accepted", correct=True,
        result={"checks": {"precision": {"rule": "fp32", "checked": False, "note": "no float32 output"}}})
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert "Not checked: no float32 output." in html
