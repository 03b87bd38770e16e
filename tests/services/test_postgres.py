"""PostgreSQL: migrations apply, and concurrent event appends keep seq gap-free and unique."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parents[2]

CONCURRENT_APPENDS = """
import threading
import django
django.setup()
from django.contrib.auth import get_user_model
from django.db import connection
from workflows.events import log as event_log
from workflows.events.contract import TitleEvent
from workflows import services
from workflows.models import WorkflowEvent

assert connection.vendor == "postgresql", connection.vendor
owner = get_user_model().objects.create_user("pg-user")
workflow = services.workflow_create(owner=owner)
errors = []

def append_many():
    try:
        for index in range(25):
            title = TitleEvent(round=0, title=f"t{index}")
            event_log.event_append(workflow_id=workflow.pk, event=title)
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()

threads = [threading.Thread(target=append_many) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
seqs = sorted(WorkflowEvent.objects.filter(workflow=workflow).values_list("seq", flat=True))
print(errors or seqs == list(range(1, 101)))
"""

SEARCH = """
import django
django.setup()
from django.contrib.auth import get_user_model
from django.db import connection
from workflows import selectors, services

assert connection.vendor == "postgresql", connection.vendor
owner = get_user_model().objects.create_user("pg-search")
found = services.workflow_create(owner=owner, title="Café Über")
services.message_create(workflow=found, role="user", content="ΣΟΦΊΑ", round=1)
services.workflow_create(owner=owner, title="Other")
typed = services.workflow_create(owner=owner, title="ΟΔΟΣ İstanbul")
print(list(selectors.workflow_search(user=owner, query="ΟΔΟΣ İstanbul")) == [typed])
queries = ("CAFÉ über", "σοφία")
print([list(selectors.workflow_search(user=owner, query=q)) == [found] for q in queries])
"""


def run(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "poweron.settings"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_migrations_apply_and_seq_stays_unique_under_concurrency(postgres_url):
    """100 events appended from 4 threads get exactly seq 1..100 on PostgreSQL."""
    migrate = run(postgres_url, "manage.py", "migrate", "--noinput")
    assert migrate.returncode == 0, migrate.stderr
    result = run(postgres_url, "-c", CONCURRENT_APPENDS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
    # The sidebar's search ignores case in every alphabet here too.
    result = run(postgres_url, "-c", SEARCH)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "[True,", "True]"]
