"""Settings come from the environment; checked in a fresh interpreter per case."""

import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json
from django.conf import settings
import django
django.setup()
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "name": str(settings.DATABASES["default"]["NAME"]),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "debug": settings.DEBUG,
    "hosts": settings.ALLOWED_HOSTS,
    "key": settings.SECRET_KEY,
    "api_key": settings.POWERON_LLM_API_KEY,
    "max_steps": settings.POWERON_MAX_STEPS,
}))
"""


def probe(tmp_path, **env: str) -> dict:
    """Load the settings in a new interpreter with only the given variables set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POWERON_", "DJANGO_"))}
    for name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"):
        clean.pop(name, None)
    clean.pop("OPENAI_API_KEY", None)
    clean.update(DJANGO_SETTINGS_MODULE="poweron.settings", POWERON_VAR_DIR=str(tmp_path), **env)
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_embedded_defaults(tmp_path):
    """Unset, the app runs on a SQLite file and the in-memory channel layer."""
    values = probe(tmp_path)
    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["name"] == str(tmp_path / "db.sqlite3")
    assert values["layer"] == "channels.layers.InMemoryChannelLayer"
    assert values["debug"] is False
    assert values["max_steps"] == 5


def test_secret_key_generated_once_into_an_ignored_file(tmp_path):
    """Without SECRET_KEY a key is generated once and reused on the next start."""
    first = probe(tmp_path)["key"]
    assert len(first) > 40
    assert (tmp_path / ".secret_key").read_text() == first
    assert probe(tmp_path)["key"] == first
    assert probe(tmp_path, SECRET_KEY="given")["key"] == "given"


def test_production_services_from_urls(tmp_path):
    """DATABASE_URL selects PostgreSQL and REDIS_URL the Redis channel layer."""
    values = probe(
        tmp_path,
        DATABASE_URL="postgres://u@127.0.0.1:5432/poweron",
        REDIS_URL="redis://127.0.0.1:6379/0",
        DEBUG="true",
        ALLOWED_HOSTS="chat.example.org, 127.0.0.1",
    )
    assert values["engine"] == "django.db.backends.postgresql"
    assert values["name"] == "poweron"
    assert values["layer"] == "channels_redis.core.RedisChannelLayer"
    assert values["debug"] is True
    assert values["hosts"] == ["chat.example.org", "127.0.0.1"]


def test_model_key_falls_back_to_openai_api_key(tmp_path):
    """POWERON_LLM_API_KEY wins; OPENAI_API_KEY is the fallback."""
    assert probe(tmp_path, OPENAI_API_KEY="sk-a")["api_key"] == "sk-a"
    assert probe(tmp_path, OPENAI_API_KEY="sk-a", POWERON_LLM_API_KEY="k-b")["api_key"] == "k-b"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("POWERON_MAX_STEPS", "five", "POWERON_MAX_STEPS must be an integer, got 'five'"),
        # Out of bounds: every round would fail inside instead.
        ("POWERON_MAX_STEPS", "0", "POWERON_MAX_STEPS must be between 1 and 50, got '0'"),
        ("POWERON_WORKER_CONCURRENCY", "0", "POWERON_WORKER_CONCURRENCY must be at least 1"),
        ("POWERON_FAILOVER_SECONDS", "-5", "POWERON_FAILOVER_SECONDS must be at least 1"),
        # Limits that were not checked, so a web tool or the parser failed later instead.
        ("POWERON_SCRAPE_MAX_PAGES", "50", "POWERON_SCRAPE_MAX_PAGES must be between 1 and 20"),
        ("POWERON_FETCH_MAX_BYTES", "0", "POWERON_FETCH_MAX_BYTES must be at least 1"),
        ("POWERON_DOCUMENT_PARSE_TIMEOUT", "-3", "POWERON_DOCUMENT_PARSE_TIMEOUT must be at"),
        ("POWERON_LOGIN_COOLOFF_SECONDS", "-5", "POWERON_LOGIN_COOLOFF_SECONDS must be at"),
    ],
)
def test_a_bad_number_stops_start_up_naming_the_variable(tmp_path, variable, value, said):
    """A value that is not a number, or out of its bounds, stops start-up with the variable
    named."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    env.update({"POWERON_VAR_DIR": str(tmp_path), variable: value})
    result = subprocess.run(
        [sys.executable, "-c", "import poweron.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert said in result.stderr


def test_a_login_failure_limit_of_zero_turns_throttling_off(tmp_path):
    """`POWERON_LOGIN_FAILURE_LIMIT=0` means no throttling, as documented (it stopped
    start-up with "must be at least 1")."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    env.update({"POWERON_VAR_DIR": str(tmp_path), "POWERON_LOGIN_FAILURE_LIMIT": "0"})
    script = "import poweron.settings as s; print(s.AXES_ENABLED)"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_model_call_may_last_a_fraction_of_a_second_more(tmp_path):
    """POWERON_LLM_TIMEOUT takes seconds with a fraction, like the other durations."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    env.update(POWERON_VAR_DIR=str(tmp_path), POWERON_LLM_TIMEOUT="1.5")
    code = "import poweron.settings as s; print(s.POWERON_LLM_TIMEOUT)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.stdout.strip() == "1.5"


@pytest.mark.django_db
def test_first_account_created_once_and_password_printed():
    """With no user, a superuser is created and its password printed; never again after."""
    out = StringIO()
    call_command("ensure_first_account", stdout=out)
    text = out.getvalue()
    password = text.split("password: ")[1].split()[0]
    user = get_user_model().objects.get()
    assert user.is_superuser
    assert user.check_password(password)
    again = StringIO()
    call_command("ensure_first_account", stdout=again)
    assert again.getvalue() == ""
    assert get_user_model().objects.count() == 1


@pytest.mark.django_db
def test_the_first_run_says_where_the_password_is_and_how_to_set_a_new_one(client):
    """The first account's block names `make password`, which runs Django's changepassword
    for it; the sign-in page says where the first account was printed only while nobody has
    signed in (later runs print nothing, and the page no longer says they did)."""
    out = StringIO()
    call_command("ensure_first_account", stdout=out)
    assert "Lost it? `make password ACCOUNT=admin` sets a new one." in out.getvalue()
    password = out.getvalue().split("password: ")[1].split()[0]
    dry = subprocess.run(
        ["make", "-n", "password", "ACCOUNT=admin"], cwd=ROOT, capture_output=True, text=True
    )
    assert "manage.py changepassword admin" in dry.stdout, dry.stdout + dry.stderr
    page = client.get("/login/").content.decode()
    assert "No one has signed in yet." in page and "<code>make password</code>" in page
    assert client.post("/login/", {"username": "admin", "password": password}).status_code == 302
    client.post("/logout/")
    page = client.get("/login/").content.decode()
    assert "No one has signed in yet" not in page and "make run" not in page


@pytest.mark.django_db
def test_an_account_nobody_can_sign_in_as_does_not_stop_the_first_one():
    """run_workflow's "cli" owner (no password) before the first `make run`: a first
    account is still created and printed (none was, and nobody could sign in)."""
    get_user_model().objects.create(username="cli", password="!")
    get_user_model().objects.create(username="admin", password="")
    out = StringIO()
    call_command("ensure_first_account", stdout=out)
    assert "First account created" in out.getvalue()
    username = out.getvalue().split("username: ")[1].split()[0]
    assert username.startswith("admin-")
    assert get_user_model().objects.get(username=username).is_superuser


def test_tool_limits_reach_the_tools(settings):
    """The fetch and crawl limits set for the site are the ones the web tools use."""
    from workflows.execution import setup
    from workflows.tools.web.settings import ToolSettings

    settings.POWERON_FETCH_MAX_BYTES = 1024
    settings.POWERON_FETCH_TIMEOUT = 3
    settings.POWERON_CRAWL_MAX_PAGES = 4
    settings.POWERON_WEB_ENRICHMENT = False
    loaded = ToolSettings.load(setup.tool_settings())
    assert (loaded.fetch_max_bytes, loaded.fetch_timeout) == (1024, 3.0)
    assert (loaded.crawl_max_pages, loaded.web_enrichment) == (4, False)


def test_invalid_tool_limits_leave_web_tools_out_with_the_reason(settings):
    """A limit out of range does not crash the chat: web search says why it is missing."""
    from workflows.execution import tools_panel

    settings.POWERON_SEARCH_PROVIDER = "searxng"
    settings.POWERON_SEARXNG_URL = "http://127.0.0.1:9"
    settings.POWERON_CRAWL_MAX_PAGES = 100_000
    overview = {tool["name"]: tool for tool in tools_panel.tool_overview()}
    assert not overview["web.search"]["available"]
    assert "POWERON_CRAWL_MAX_PAGES" in overview["web.search"]["reason"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"POWERON_RUNNER": "worker"}, "POWERON_RUNNER=worker needs REDIS_URL"),
        ({"POWERON_RUNNER": "celery"}, "POWERON_RUNNER must be inline or worker"),
    ],
)
def test_runner_mode_is_checked_at_start(tmp_path, env, message):
    """A runner mode that cannot work stops start-up with the reason."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    clean.pop("REDIS_URL", None)
    clean.update(POWERON_VAR_DIR=str(tmp_path), **env)
    result = subprocess.run(
        [sys.executable, "-c", "import poweron.settings"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize(
    ("base_url", "choice", "schemas"),
    [
        ("http://127.0.0.1:8081/v1", "auto", "narrow"),  # llama-server on this machine
        ("http://localhost:11434/v1", "auto", "narrow"),
        ("http://10.0.0.7:8000/v1", "auto", "narrow"),  # vLLM on the private network
        ("https://api.openai.com/v1", "auto", "shared"),  # a hosted provider's cache
        ("", "auto", "shared"),
        ("http://127.0.0.1:8081/v1", "stable", "stable"),
        ("https://api.openai.com/v1", "stable", "stable"),
        ("http://127.0.0.1:8081/v1", "shared", "shared"),
        ("https://api.openai.com/v1", "narrow", "narrow"),
        ("https://api.openai.com/v1", "sometimes", "shared"),  # unknown: auto, with a warning
    ],
)
def test_call_schemas_follow_where_the_model_server_is(settings, base_url, choice, schemas):
    """Nothing is resolved: only literal addresses and localhost count as local."""
    from workflows.execution import setup

    settings.POWERON_LLM_BASE_URL = base_url
    settings.POWERON_LLM_SCHEMAS = choice
    assert setup.call_schemas() == schemas


def test_the_durable_runtime_reaches_postgresql_with_any_password(settings):
    """DBOS's URL is built from the app's database settings: a password with @ or / (given
    percent-encoded in DATABASE_URL) and options such as sslmode reach it intact."""
    from sqlalchemy.engine import make_url

    from workflows.execution import durable

    settings.POWERON_DBOS_DATABASE_URL = ""
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "poweron",
        "USER": "app",
        "PASSWORD": "p@ss/w0rd:x",
        "HOST": "127.0.0.1",
        "PORT": "5433",
        "OPTIONS": {"sslmode": "require"},
    }
    url = make_url(durable.system_database_url(database))
    assert (url.username, url.password, url.host, url.port, url.database) == (
        "app", "p@ss/w0rd:x", "127.0.0.1", 5433, "poweron",
    )  # fmt: skip
    assert url.query == {"sslmode": "require"}


def test_log_lines_say_when_how_bad_and_where_and_a_foreign_host_is_one_line():
    """Every line carries its time, level and logger; a request for a host the app does not
    serve (scanners send many) is logged in one line, without a traceback."""
    import logging

    try:
        raise ValueError("Invalid HTTP_HOST header: 'scanner.example'")
    except ValueError:
        record = logging.LogRecord(
            "django.security.DisallowedHost", logging.ERROR, __file__, 1,
            "Invalid HTTP_HOST header: 'scanner.example'", None, sys.exc_info(),
        )  # fmt: skip
    handlers = logging.getLogger("django.security.DisallowedHost").handlers
    (handler,) = [h for h in handlers if isinstance(h, logging.StreamHandler) and h.filters]
    assert handler.filter(record)
    line = handler.format(record)
    assert "Traceback" not in line and "\n" not in line
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ERROR django.security.Disallowed", line)


def test_a_web_process_whose_database_is_unreachable_stops_and_says_why(tmp_path):
    """Daphne cannot start the durable runtime (its database refuses connections): it logs
    why, with the password masked, and exits non-zero for its supervisor to restart it,
    instead of serving pages whose runs never start."""
    from tests.support.apps import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    env.update(
        POWERON_VAR_DIR=str(tmp_path),
        DATABASE_URL="postgres://postgres:pw-not-shown@127.0.0.1:1/nowhere",
    )
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(free_port())]
    result = subprocess.run(
        [*command, "poweron.asgi:application"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 3
    assert "PowerOn cannot start its durable runtime (DBOS at postgresql://postgres:***@" in (
        result.stderr
    )
    assert "pw-not-shown" not in result.stderr + result.stdout


def test_a_worker_whose_durable_runtime_cannot_start_exits_3_and_says_why(tmp_path):
    """run_workers, like Daphne, says why its durable runtime cannot start (the password
    masked) and exits 3 for its supervisor (it exited 1 on an unhandled exception)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERON_")}
    env.update(
        POWERON_VAR_DIR=str(tmp_path),
        POWERON_DBOS_DATABASE_URL="postgresql://postgres:pw-not-shown@127.0.0.1:1/nowhere",
        REDIS_URL="redis://127.0.0.1:1/0",  # named only: the worker stops before using it
    )

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert manage("migrate", "--noinput").returncode == 0
    result = manage("run_workers", "--executor-id", "w-test")
    assert result.returncode == 3, result.stderr[-2000:]
    assert "PowerOn cannot start its durable runtime (DBOS at postgresql://postgres:***@" in (
        result.stderr
    )
    assert "pw-not-shown" not in result.stderr + result.stdout
