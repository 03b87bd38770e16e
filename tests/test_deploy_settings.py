"""The production environment docs/production.md documents passes `check --deploy` with no warning,
and none of its HTTPS settings is on by default (`make run` serves plain http)."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HTTPS_SETTINGS = [
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
]


def documented_production_env() -> dict[str, str]:
    """The variables of the README's `# /etc/poweron/production.env` block."""
    readme = (ROOT / "docs" / "production.md").read_text()
    block = re.search(r"```sh\n# /etc/poweron/production.env\n(.*?)```", readme, re.S)
    assert block, "docs/production.md lost its production environment block"
    lines = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def bare_env(tmp_path) -> dict[str, str]:
    """This process's environment without any of the app's variables."""
    app = {
        "DATABASE_URL",
        "REDIS_URL",
        "SECRET_KEY",
        "DEBUG",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
    }
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("POWERON_", "DJANGO_")) and k not in app | set(HTTPS_SETTINGS)
    } | {"POWERON_VAR_DIR": str(tmp_path)}


def manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run manage.py in a fresh interpreter with only the given app variables set."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=bare_env(tmp_path) | env,
        capture_output=True,
        text=True,
    )


def test_documented_production_settings_pass_check_deploy(tmp_path):
    """`manage.py check --deploy --fail-level WARNING` finds no issue at all."""
    env = documented_production_env()
    assert set(HTTPS_SETTINGS) <= set(env)
    env["SECRET_KEY"] = secrets.token_urlsafe(50)  # the README's is a placeholder
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


PROBE = """
from django.conf import settings
print({name: getattr(settings, name) for name in %r})
"""


def test_https_settings_are_off_by_default(tmp_path):
    """Unset, nothing redirects to https or needs https cookies: `make run` works on http."""
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()" + PROBE % HTTPS_SETTINGS],
        cwd=ROOT,
        env={**bare_env(tmp_path), "DJANGO_SETTINGS_MODULE": "poweron.settings"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(
        {
            "SECURE_SSL_REDIRECT": False,
            "SECURE_HSTS_SECONDS": 0,
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
            "SECURE_HSTS_PRELOAD": False,
            "SESSION_COOKIE_SECURE": False,
            "CSRF_COOKIE_SECURE": False,
            "SECURE_PROXY_SSL_HEADER": None,
        }
    )


def test_the_proxy_header_is_read_as_django_wants_it(tmp_path):
    """`X-Forwarded-Proto` means the header's value `https`; `Name: value` names both."""
    code = "from poweron.settings import proxy_ssl_header as p; print(p(%r), p(%r), p(''))"
    result = subprocess.run(
        [sys.executable, "-c", code % ("X-Forwarded-Proto", "X-Forwarded-Ssl: on")],
        cwd=ROOT,
        env=bare_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
        "('HTTP_X_FORWARDED_SSL',",
        "'on')",
        "None",
    ]
