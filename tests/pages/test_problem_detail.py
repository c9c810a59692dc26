from html import unescape

import pytest
from django.utils.html import strip_tags


@pytest.mark.django_db
def test_it_shows_description_highlighted_reference_and_a_cpp_starter(client, problem):
    r = client.get("/problems/relu-scale/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "y = relu(x) * scale" in html
    # pygments, server-side: the reference is in a highlight block with token classes
    ref = html[html.index('id="reference-source"'):]
    assert '<div class="highlight">' in ref and '<span class="k">class</span>' in ref
    # the starter copies Model's signatures: __init__(self, scale), forward(self, x, bias)
    starter = unescape(strip_tags(html[html.index('id="starter-cpp"'):]))
    assert "cpp_sources=cpp_source" in starter
    assert "torch::Tensor forward(torch::Tensor x, torch::Tensor bias)" in starter
    assert "def __init__(self, scale):" in starter and "def forward(self, x, bias):" in starter
    assert 'id="starter-cuda"' not in html  # the cpu track only
    assert 'href="/submit/?problem=relu-scale&amp;pool=cpu"' in html


@pytest.mark.django_db
def test_it_offers_a_cuda_starter_on_a_gpu_track(client, problem, gpu_pool):
    problem.pools.add(gpu_pool)
    html = client.get("/problems/relu-scale/").content.decode()
    assert 'id="starter-cuda"' in html and 'id="starter-cpp"' in html
    cuda = html[html.index('id="starter-cuda"'):]
    assert "__global__" in cuda and "cuda_sources" in cuda


@pytest.mark.django_db
def test_it_lists_only_the_viewers_own_submissions(client, problem, alice, bob, alice_submission):
    client.force_login(alice)
    html = client.get("/problems/relu-scale/").content.decode()
    assert f'href="/submissions/{alice_submission.pk}/"' in html

    client.force_login(bob)
    html = client.get("/problems/relu-scale/").content.decode()
    assert f'href="/submissions/{alice_submission.pk}/"' not in html
    assert "None yet." in html

    client.logout()
    html = client.get("/problems/relu-scale/").content.decode()
    assert "to submit and to see your submissions here" in html


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_or_retired_problem(client, problem):
    assert client.get("/problems/no-such-problem/").status_code == 404
    problem.is_active = False
    problem.save()
    assert client.get("/problems/relu-scale/").status_code == 404


@pytest.mark.django_db
def test_it_renders_a_friendly_404_page(client, settings):
    settings.DEBUG = False
    r = client.get("/problems/no-such-problem/")
    assert r.status_code == 404
    assert "There is nothing at <code>/problems/no-such-problem/</code>" in r.content.decode()


def test_it_renders_the_500_page_without_a_request_context(rf):
    from django.views.defaults import server_error

    r = server_error(rf.get("/"))
    assert r.status_code == 500
    assert "Something went wrong on our side" in r.content.decode()


@pytest.mark.django_db
def test_it_links_the_problems_board_on_each_track(client, problem, gpu_pool):
    problem.pools.add(gpu_pool)
    html = client.get("/problems/relu-scale/").content.decode()
    assert 'href="/leaderboard/cpu/problems/relu-scale/"' in html
    assert 'href="/leaderboard/h200/problems/relu-scale/"' in html


@pytest.mark.django_db
def test_the_starter_follows_an_edited_reference(client, problem):
    """Starters are built once per process and reference text: a new reference gets its own at once."""
    client.get("/problems/relu-scale/")
    problem.source = problem.source.replace("def forward(self, x, bias)", "def forward(self, x, bias, gate)")
    problem.save(update_fields=["source"])
    starter = unescape(strip_tags(client.get("/problems/relu-scale/").content.decode().split('id="starter-cpp"')[1]))
    assert "def forward(self, x, bias, gate):" in starter
