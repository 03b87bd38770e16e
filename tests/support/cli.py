"""`manage.py run_workflow` as a real subprocess, each run on a database of its own.

The command runs exactly as a user runs it: its exit status and its stdout (one JSON event
per line) are what the tests check. The subprocess is not under the pytest network guard,
so `cli_env` refuses any URL that does not point at 127.0.0.1.

Run as a module (``python -m tests.support.cli download ...``) it fetches one document
through the app's download view, signed in as a user, and prints the response as JSON.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 90

_INHERITED_PREFIXES = ("OPENAI_", "POWERON_")
_INHERITED_NAMES = {
    "DATABASE_URL",
    "REDIS_URL",
    "MEDIA_ROOT",
    "DJANGO_SETTINGS_MODULE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
}


def cli_env(var_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of one subprocess: nothing inherited that configures the app, its
    database and media under `var_dir`, plus `settings` (POWERON_* names).

    Every URL in `settings` must point at 127.0.0.1: the subprocess is not network-guarded.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_INHERITED_PREFIXES) and name not in _INHERITED_NAMES
    }
    for name, value in settings.items():
        if "://" in value and not value.startswith("sqlite:"):  # a file, not an address
            host = urlsplit(value).hostname
            assert host == "127.0.0.1", f"{name}={value!r} does not point at 127.0.0.1"
    env.update(settings)
    env.setdefault("POWERON_DEMO_DELAY_MS", "0")  # the demo model answers at once in tests
    env["POWERON_VAR_DIR"] = str(var_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def manage(
    var_dir: Path, *args: str, settings: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python manage.py ARGS` against the database in `var_dir`."""
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        cwd=REPO,
        env=cli_env(var_dir, **(settings or {})),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def migrated(var_dir: Path) -> Path:
    """Create a migrated database (and the secret key file) in `var_dir`."""
    result = manage(var_dir, "migrate", "--no-input", "-v", "0")
    assert result.returncode == 0, result.stderr
    return var_dir


def copy_database(template: Path, var_dir: Path) -> Path:
    """A fresh copy of a migrated var directory, for one test's runs."""
    shutil.copytree(template, var_dir)
    return var_dir


@dataclass
class CliRun:
    """What one `run_workflow` invocation gave back."""

    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, type_: str) -> list[dict[str, Any]]:
        """The events of one type, in order."""
        return [event for event in self.events if event["type"] == type_]

    @property
    def workflow(self) -> int:
        """The id of the workflow the run created."""
        return self.events[0]["workflow"]

    def documents(self, label_prefix: str = "") -> list[dict[str, Any]]:
        """The documents of `document` events whose label starts with `label_prefix`."""
        found = [event["payload"]["document"] for event in self.of("document")]
        return [doc for doc in found if doc["label"].startswith(label_prefix)]

    @property
    def answer(self) -> str:
        """The final answer's text."""
        finals = [e for e in self.of("message") if e["payload"].get("role") == "assistant"]
        return finals[-1]["payload"]["content"] if finals else ""

    def explain(self) -> str:
        """Enough of the run to see what went wrong in an assertion message."""
        lines = [f"exit {self.returncode}", "stderr:", self.stderr[-3000:], "events:"]
        lines += [f"  {e['seq']} {e['type']} {json.dumps(e['payload'])[:200]}" for e in self.events]
        return "\n".join(lines)


def run_workflow(var_dir: Path, *args: str, settings: dict[str, str] | None = None) -> CliRun:
    """Run `manage.py run_workflow ARGS`; stdout is parsed as one JSON event per line."""
    result = manage(var_dir, "run_workflow", *args, settings=settings)
    run = CliRun(result.returncode, result.stdout, result.stderr)
    for number, line in enumerate(result.stdout.splitlines(), start=1):
        try:
            run.events.append(json.loads(line))
        except ValueError as error:
            raise AssertionError(f"stdout line {number} is not JSON: {line!r}") from error
    return run


@dataclass
class Download:
    """The app's answer to a document download."""

    status: int
    content_type: str
    disposition: str
    body: bytes


def download(var_dir: Path, *, workflow: int, document: int | str, user: str) -> Download:
    """Fetch a document through the app's download view, signed in as `user` (created when
    missing), in a subprocess on the database in `var_dir`."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.cli", "download", str(workflow), str(document), user],
        cwd=REPO,
        env=cli_env(var_dir),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return Download(
        status=answer["status"],
        content_type=answer["contentType"],
        disposition=answer["disposition"],
        body=base64.b64decode(answer["body"]),
    )


def _download_main(workflow: str, document: str, username: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poweron.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()  # lets the test client's "testserver" host in
    user = get_user_model().objects.get_or_create(username=username)[0]
    client = Client()
    client.force_login(user)
    response = client.get(reverse("workflows:document", args=[int(workflow), int(document)]))
    try:
        body = b"".join(response.streaming_content) if response.streaming else response.content
    finally:
        response.close()
    answer = {
        "status": response.status_code,
        "contentType": response.get("Content-Type", ""),
        "disposition": response.get("Content-Disposition", ""),
        "body": base64.b64encode(body).decode(),
    }
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command != "download" or len(rest) != 3:
        sys.exit("usage: python -m tests.support.cli download WORKFLOW DOCUMENT USER")
    _download_main(*rest)
