import pytest

from apps.submissions.models import Evaluation


@pytest.mark.django_db
def test_it_lists_problems_with_level_tracks_and_solved_count(client, problem, alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(status="done", stage="done", verdict="accepted")
    r = client.get("/problems/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "ReLU and scale" in html
    assert 'href="/problems/relu-scale/"' in html
    assert "Level 1" in html
    assert '<span class="badge pool-badge">cpu</span>' in html
    row = html[html.index('data-problem="relu-scale"'):]
    row = row[: row.index("</tr>")]
    assert '1 <span class="muted small">entrant</span>' in row


@pytest.mark.django_db
def test_it_links_the_problem_list_from_the_home_page(client, problem):
    assert 'href="/problems/" id="to-problems"' in client.get("/").content.decode()
    assert "ReLU and scale" in client.get("/problems/").content.decode()


@pytest.mark.django_db
def test_it_filters_by_level_and_track(client, problem, gpu_pool):
    from apps.submissions.models import Problem

    other = Problem.objects.create(slug="conv-big", title="Big convolution", level=2, source="x", content_hash="h")
    other.pools.add(gpu_pool)

    html = client.get("/problems/?level=2").content.decode()
    assert "Big convolution" in html and "ReLU and scale" not in html

    html = client.get("/problems/?pool=cpu").content.decode()
    assert "ReLU and scale" in html and "Big convolution" not in html

    html = client.get("/problems/?pool=cpu&level=2").content.decode()
    assert "No problem matches these filters" in html


@pytest.mark.django_db
def test_it_says_when_a_filter_names_nothing(client, problem):
    html = client.get("/problems/?level=banana&pool=tpu").content.decode()
    assert "There is no level &#x27;banana&#x27;: showing every level." in html
    assert "There is no track &#x27;tpu&#x27;: showing every track." in html
    assert "ReLU and scale" in html


@pytest.mark.django_db
def test_it_counts_no_solver_for_rejected_or_moderated_work(client, problem, alice_submission):
    Evaluation.objects.filter(submission=alice_submission).update(status="done", verdict="accepted")
    alice_submission.moderation = "hacked"
    alice_submission.save()
    html = client.get("/problems/").content.decode()
    row = html[html.index('data-problem="relu-scale"'):]
    assert '0 <span class="muted small">entrants</span>' in row[: row.index("</tr>")]
