import pytest

from apps.submissions.models import Evaluation

RESULT = {
    "verdict": "accepted", "correct": True, "runtime_us": 1520.0, "eager_us": 3040.0, "compile_us": 2280.0,
    "speedup_vs_eager": 2.0, "speedup_vs_compile": 1.5, "message": "",
    # the evaluator's shapes (gpu_runner.timing.summarize)
    "stats": {"n": 31, "mean_us": 1525.0, "std_us": 12.5, "median_us": 1520.0, "min_us": 1490.0, "max_us": 1601.0,
              "ci95_us": [1500.0, 1544.0], "rse": 0.0015},
    "baselines": {"eager": {"n": 20, "mean_us": 3050.0, "std_us": 30.0, "median_us": 3040.0, "min_us": 3001.0,
                            "max_us": 3111.0, "ci95_us": [3020.0, 3070.0], "rse": 0.002},
                  "compile": None},
    "device": {"name": "cpu", "clock_mhz": 2400},
    "isolation": {"sandbox": "bubblewrap"},
}


def _finish(submission, **fields):
    Evaluation.objects.filter(submission=submission).update(status="done", stage="done", **fields)


@pytest.mark.django_db
def test_it_shows_verdict_timings_statistics_and_isolation(client, alice_submission):
    _finish(alice_submission, verdict="accepted", correct=True, runtime_us=1520.0, eager_us=3040.0,
            compile_us=2280.0, speedup_vs_eager=2.0, speedup_vs_compile=1.5, result=RESULT)
    r = client.get(f"/submissions/{alice_submission.pk}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert '<span class="badge verdict-accepted badge-lg">Accepted</span>' in html
    assert '<div class="value" data-field="runtime_us">1.52 ms</div>' in html
    assert '<div class="value" data-field="eager_us">3.04 ms</div>' in html
    assert "2.00×" in html and "1.50×" in html
    assert "n = 31 · CI 1.50 ms–1.54 ms" in html
    stats = html[html.index('id="timing-stats"'):]
    stats = stats[: stats.index("</section>")]
    assert '<th scope="row">This kernel</th>' in stats and '<th scope="row">PyTorch eager</th>' in stats
    assert "torch.compile</th>" not in stats  # no statistics for it in this result
    assert "1.50 ms – 1.54 ms" in stats and "1.52 ms ± 12.5 µs" in stats and "<td class=\"num\">31</td>" in stats
    assert "3.02 ms – 3.07 ms" in stats
    assert "bubblewrap" in html and "<tr><th>Clock</th><td>2400 MHz</td></tr>" in html
    # progress: every stage done, the last one says the verdict
    assert '<li class="is-done" data-stage="timing">Timing</li>' in html
    assert '<li class="is-done" data-stage="verdict">Accepted</li>' in html


@pytest.mark.django_db
def test_it_shows_stage_progress_while_running(client, alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(status="running", stage="checking")
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert '<li class="is-done" data-stage="compiling">Compiling</li>' in html
    assert '<li class="is-current" data-stage="checking">Checking correctness</li>' in html
    assert '<li class="is-pending" data-stage="timing">Timing</li>' in html
    assert "/static/js/submission.js" in html


@pytest.mark.django_db
def test_it_shows_the_mismatch_of_a_wrong_answer(client, alice_submission):
    _finish(alice_submission, verdict="wrong_answer", correct=False,
            message="output 0 at index (3, 7): expected 0.5, got 0.0")
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert "Mismatch" in html
    assert "output 0 at index (3, 7): expected 0.5, got 0.0" in html
    assert '<li class="is-failed" data-stage="checking">Checking correctness</li>' in html


@pytest.mark.django_db
def test_it_lists_every_evaluation_of_a_rerun_submission(client, alice_submission):
    first = alice_submission.evaluations.get()
    _finish(alice_submission, verdict="accepted", runtime_us=10.0)
    second = Evaluation.objects.create(submission=alice_submission)
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    table = html[html.index('id="all-evaluations"'):]
    assert f"<td>{first.pk}</td>" in table and f"<td>{second.pk}</td>" in table
    # the newest is the one followed at the top
    assert f'data-evaluation-id="{second.pk}"' in html


@pytest.mark.django_db
def test_it_serves_the_evaluation_part_alone_for_live_refresh(client, alice_submission):
    html = client.get(f"/submissions/{alice_submission.pk}/?partial=evaluation").content.decode()
    assert 'data-stage="queued"' in html
    assert "<html" not in html and "solution-source" not in html


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_submission(client, db):
    assert client.get("/submissions/999999/").status_code == 404


@pytest.mark.django_db
def test_it_tells_the_owner_why_a_submission_was_moderated(client, alice, bob, alice_submission):
    alice_submission.moderation = "hacked"
    alice_submission.moderation_reason = "Returns a cached output for repeated inputs."
    alice_submission.save()
    client.force_login(alice)
    assert "Returns a cached output for repeated inputs." in client.get(
        f"/submissions/{alice_submission.pk}/").content.decode()
    client.force_login(bob)
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert "removed from the rankings" in html
    assert "Returns a cached output" not in html


@pytest.mark.django_db
def test_it_offers_staff_the_moderation_form(client, sam, bob, alice_submission):
    client.force_login(bob)
    assert 'id="moderation"' not in client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    client.force_login(sam)
    page = f"/submissions/{alice_submission.pk}/"
    html = client.get(page).content.decode()
    assert f'action="/leaderboard/moderate/submissions/{alice_submission.pk}/"' in html
    r = client.post(f"/leaderboard/moderate/submissions/{alice_submission.pk}/",
                    {"moderation": "hacked", "reason": "Caches outputs across calls.", "next": page})
    assert r.status_code == 302 and r["Location"] == page
    alice_submission.refresh_from_db()
    assert alice_submission.moderation == "hacked"
    assert "Caches outputs across calls." in client.get(page).content.decode()


def test_it_formats_times_for_people():
    from apps.submissions.templatetags.kernelhub import us

    assert [us(v) for v in (None, 4.123, 41.23, 412.3, 4123.0, 41230.0, 412300.0, 4123000.0)] == [
        "–", "4.12 µs", "41.2 µs", "412 µs", "4.12 ms", "41.2 ms", "412 ms", "4.12 s"]


@pytest.mark.django_db
def test_it_says_a_runner_failure_is_no_verdict_on_the_code(client, alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(status="failed", stage="compiling")
    html = client.get(f"/submissions/{alice_submission.pk}/").content.decode()
    assert "No verdict: runner failure" in html
    assert '<li class="is-failed" data-stage="verdict">No verdict</li>' in html
    assert "This says nothing about the code: submit it again later." in html
