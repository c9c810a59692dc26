import pytest


@pytest.mark.django_db
def test_it_renders_the_login_page_and_logs_in(client, alice):
    r = client.get("/accounts/login/?next=/submit/")
    assert r.status_code == 200
    assert 'id="login-form"' in r.content.decode()
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-password-1", "next": "/submit/"})
    assert r.status_code == 302 and r["Location"] == "/submit/"


@pytest.mark.django_db
def test_it_explains_a_failed_login(client, alice):
    r = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert r.status_code == 200
    assert "That username and password do not match an account." in r.content.decode()


@pytest.mark.django_db
def test_it_logs_out_with_a_post_from_the_nav(client, alice):
    client.force_login(alice)
    html = client.get("/problems/").content.decode()
    assert 'action="/accounts/logout/"' in html and "Log out" in html
    r = client.post("/accounts/logout/")
    assert r.status_code == 302
    assert "Log in" in client.get("/problems/").content.decode()


@pytest.mark.django_db
def test_it_signs_up_and_logs_in(client, problem):
    r = client.post("/signup/", {"username": "carol", "password1": "a-long-passphrase-9",
                                 "password2": "a-long-passphrase-9", "next": "/problems/relu-scale/"})
    assert r.status_code == 302 and r["Location"] == "/problems/relu-scale/"
    html = client.get("/problems/").content.decode()
    assert "Log out" in html and "carol" in html


@pytest.mark.django_db
def test_it_explains_sign_up_errors(client, alice):
    r = client.post("/signup/", {"username": "alice", "password1": "x", "password2": "y"})
    assert r.status_code == 200
    errors = r.context["form"].errors
    assert errors["username"] == ["A user with that username already exists."]
    assert "password2" in errors


@pytest.mark.django_db
def test_it_ignores_an_offsite_next(client):
    r = client.post("/signup/", {"username": "dave", "password1": "a-long-passphrase-9",
                                 "password2": "a-long-passphrase-9", "next": "https://evil.example/"})
    assert r["Location"] == "/"


@pytest.mark.django_db
def test_it_shows_the_staff_link_to_staff_only(client, alice, sam):
    client.force_login(alice)
    assert 'href="/staff/"' not in client.get("/problems/").content.decode()
    client.force_login(sam)
    assert 'href="/staff/"' in client.get("/problems/").content.decode()
