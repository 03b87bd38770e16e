"""Run one round from the command line, stored like the app stores it, events on stdout.

Nobody sits at a terminal to answer the run's questions, so the command answers them itself,
as its flags say: more steps at the step limit (`--extend N`, default none) and approvals
(`--approve`, or `--reject`, the default). A run never waits for a person."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from argparse import ArgumentParser
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from dbos import DBOS
from dbos import error as dbos_error
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from workflows import services
from workflows.events.contract import Envelope
from workflows.execution import durable, launcher, settle, setup
from workflows.execution.checkpoints import question_topic
from workflows.execution.runner import OBSERVERS, start
from workflows.models import ChatWorkflow

if TYPE_CHECKING:
    from django.contrib.auth.models import User

EXIT_BAD_ARGUMENTS = 2


class Command(BaseCommand):
    help = (
        "Run one round of a new workflow against the configured model (or the demo model), "
        "store it like the app does, and print each event as one JSON line. It answers the "
        "run's questions itself (--extend/--decline at the step limit, --approve/--reject for "
        "approvals): it never waits for a person. "
        "Exit status: 0 completed, 1 failed or stopped, 2 bad arguments."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("task", help="The task, as a user would write it.")
        parser.add_argument("--mode", choices=[m.value for m in ChatWorkflow.Mode], default="react")
        parser.add_argument(
            "--document", action="append", default=[], metavar="PATH", help="Upload a file."
        )
        parser.add_argument("--user", default=None, help="Owner (default: a 'cli' account).")
        parser.add_argument("--max-steps", type=int, default=None)
        limit = parser.add_mutually_exclusive_group()
        limit.add_argument(
            "--extend",
            type=int,
            default=0,
            metavar="N",
            help="At the step limit, grant N more steps (once per question; default: none).",
        )
        limit.add_argument(
            "--decline",
            action="store_const",
            const=0,
            dest="extend",
            help="At the step limit, stop the task (the default).",
        )
        approval = parser.add_mutually_exclusive_group()
        approval.add_argument(
            "--approve",
            action="store_true",
            default=False,
            help="Approve every action that waits for approval.",
        )
        approval.add_argument(
            "--reject",
            action="store_false",
            dest="approve",
            help="Reject every action that waits for approval (the default).",
        )

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except CommandError as error:  # argument and input problems: exit status 2
            self.stderr.write(f"run_workflow: {error}")
            sys.exit(EXIT_BAD_ARGUMENTS)

    def handle(
        self,
        *args: Any,
        task: str,
        mode: str,
        document: list[str],
        user: str | None,
        max_steps: int | None,
        extend: int,
        approve: bool,
        **options: Any,
    ) -> None:
        if not task.strip():
            raise CommandError("the task is empty")
        if max_steps is not None and not 1 <= max_steps <= 50:
            raise CommandError("--max-steps must be between 1 and 50")
        if not 0 <= extend <= 50:
            raise CommandError("--extend must be between 0 and 50")
        self.answers = {"extend": extend, "approve": approve}
        self.sending: set[asyncio.Task[None]] = set()
        self.asked = 0
        files = read_files([Path(path) for path in document])  # before anything is stored
        owner = self.owner(user)
        # Until the round's loop listens for it, SIGTERM interrupts as Ctrl-C does.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            workflow = services.workflow_create(owner=owner, mode=mode, max_steps=max_steps)
            uploads = [
                services.document_upload(workflow=workflow, name=name, data=data)
                for name, data in files
            ]
            workflow, message, opened = services.round_open(
                workflow_id=workflow.pk,
                owner=owner,
                text=task,
                document_ids=[upload.pk for upload in uploads],
            )
            self.print_event(opened)
            OBSERVERS[workflow.pk] = self.print_event
            try:
                self.run = durable.RunRef.of(workflow)
                status = asyncio.run(self.run_round(self.run, message.pk))
            except KeyboardInterrupt:  # before the loop could stop the run: it never started
                for stored in settle.run_end(workflow.pk, "stopped", INTERRUPTED_BEFORE_START):
                    self.print_event(stored)
                status = ChatWorkflow.Status.STOPPED
        finally:
            signal.signal(signal.SIGTERM, previous)
        if status != ChatWorkflow.Status.COMPLETED:
            sys.exit(1)

    async def run_round(self, run: durable.RunRef, message_id: int) -> str:
        """Run the round durably in this process (its own executor: a run cut off here is
        taken over by the app after POWERON_FAILOVER_SECONDS). Ctrl-C or SIGTERM stops the
        run as the page's Stop does (what it did is kept); so does a Stop in the app."""
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupted.set)
        await setup.warm_up()
        await durable.launch(queues=[], executor_id=f"cli-{socket.gethostname()}-{os.getpid()}")
        workflow_id = run.workflow_id
        try:
            if interrupted.is_set():
                for stored in await database_sync_to_async(settle.run_end)(
                    workflow_id, "stopped", INTERRUPTED_BEFORE_START
                ):
                    self.print_event(stored)
                return ChatWorkflow.Status.STOPPED
            handle = await start(run, message_id, queued=False)
            stopper = asyncio.create_task(self.stop_when(interrupted, workflow_id))
            try:
                return await handle.get_result()
            except dbos_error.DBOSAwaitedWorkflowCancelledError:  # stopped, here or in the app
                return await launcher.wait_for(workflow_id) or ChatWorkflow.Status.STOPPED
            finally:
                stopper.cancel()
        finally:
            DBOS.destroy()

    async def stop_when(self, interrupted: asyncio.Event, workflow_id: int) -> None:
        """Stop the run once interrupted (a second interrupt changes nothing)."""
        await interrupted.wait()
        with suppress(launcher.CommandRefused):
            await launcher.request_stop(workflow_id=workflow_id)

    def owner(self, username: str | None) -> User:
        User = get_user_model()
        if username is None:
            # An account no one signs in as (ensure_first_account does not count it).
            return User.objects.get_or_create(username="cli", defaults={"password": "!"})[0]
        try:
            return User.objects.get(username=username)
        except User.DoesNotExist as missing:
            raise CommandError(f"no user named {username!r}") from missing

    def print_event(self, event: Envelope) -> None:
        """Print the event (the operator runs this: an error's operator detail included);
        answer a question it asks at once, as the flags say."""
        self.stdout.write(json.dumps(event.as_json(operator=True), ensure_ascii=False))
        self.stdout.flush()
        data = event.event
        if getattr(data, "status", None) != "waiting":
            return
        if data.type == "ask":
            kind, number = "extend", data.stepsDone
            self.asked += 1
        elif data.type == "approval":
            kind, number = "approve", data.action
        else:
            return
        topic = question_topic(kind, data.task, number, asked=self.asked)
        sent = asyncio.get_running_loop().create_task(
            DBOS.send_async(self.run.dbos_id, self.answers[kind], topic)
        )
        self.sending.add(sent)  # keep a reference until it is sent
        sent.add_done_callback(self.sending.discard)


INTERRUPTED_BEFORE_START = "Interrupted before it started."


def read_files(paths: list[Path]) -> list[tuple[str, bytes]]:
    """Each file's name and bytes; one that is missing or cannot be read is a bad argument
    (exit 2), and nothing is stored."""
    files = []
    for path in paths:
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        try:
            files.append((path.name, path.read_bytes()))
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    return files


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
